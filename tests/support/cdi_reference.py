"""Comparing our device plugin's CDI spec with NVIDIA's (`nvidia-ctk cdi generate`), as a runtime applies them.

`cdi-apply` (tools/e2e/cdi-apply: the CDI library tags.cncf.io/container-device-interface v1.1.1, as a container
runtime applies specs) injects a device from a spec directory into one OCI runtime spec; the container edits
NVIDIA's spec makes (mounts by container path with their source and options, hooks by their arguments, device
nodes, env, the process's additional groups) must all be in ours. Used by `tests/e2e/test_cdi_reference.py` (a fake
driver root) and by `make gpu-check` (the real driver, :func:`compare_on_real_gpu`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "HOOK_PATH",
    "ReferenceTools",
    "apply",
    "compare_on_real_gpu",
    "container_edits",
    "find_reference_tools",
    "missing_edits",
    "run_tool",
]

HOOK_PATH = "/usr/bin/nvidia-cdi-hook"
#: A run of a reference tool may take this long before the comparison fails.
TOOL_TIMEOUT = 120
_OCI = {"ociVersion": "1.2.0", "process": {"args": ["sh"], "cwd": "/", "env": ["PATH=/usr/bin:/bin"]},
        "root": {"path": "rootfs"}, "linux": {}}
_ENV = {"PATH": "/usr/bin:/bin"}


@dataclass(frozen=True)
class ReferenceTools:
    nvidia_ctk: Path
    cdi_apply: Path


def find_reference_tools(*directories: Path) -> ReferenceTools | None:
    """`nvidia-ctk` and `cdi-apply` from the first directory holding both (the e2e tools' bin directory, a
    directory brought to a GPU machine), else from PATH; None when either is missing."""
    for directory in directories:
        if (directory / "nvidia-ctk").is_file() and (directory / "cdi-apply").is_file():
            return ReferenceTools(directory / "nvidia-ctk", directory / "cdi-apply")
    ctk, cdi_apply = shutil.which("nvidia-ctk"), shutil.which("cdi-apply")
    return ReferenceTools(Path(ctk), Path(cdi_apply)) if ctk and cdi_apply else None


def run_tool(command: list[str], stdin: str | None = None) -> str:
    """The tool's stdout; raises RuntimeError with the tail of its stderr when it fails."""
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=TOOL_TIMEOUT, env=_ENV)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-4000:]}")
    return done.stdout


def apply(cdi_apply: Path, spec_dir: Path, device: str) -> dict[str, Any]:
    """The OCI spec a container asking for `device` gets from the specs in `spec_dir`."""
    return json.loads(run_tool([str(cdi_apply), "-spec-dir", str(spec_dir), device], json.dumps(_OCI)))


def container_edits(oci: Mapping[str, Any]) -> dict[str, Any]:
    """What a spec did to the container: mounts by destination, hooks by lifecycle, device nodes, env, groups."""
    hooks: dict[str, list[list[str]]] = {}
    for lifecycle, entries in (oci.get("hooks") or {}).items():
        hooks[lifecycle] = [[h["path"], *h.get("args", [])] for h in entries]
    return {
        "mounts": {m["destination"]: (m["source"], tuple(m.get("options") or ())) for m in oci.get("mounts") or []},
        "hooks": hooks,
        "devices": {d["path"]: (d.get("type"), d.get("major"), d.get("minor"))
                    for d in (oci.get("linux") or {}).get("devices") or []},
        "env": set((oci.get("process") or {}).get("env") or []),
        "gids": set(((oci.get("process") or {}).get("user") or {}).get("additionalGids") or []),
    }


def _links(hooks: list[list[str]]) -> set[str]:
    return {h[i + 1] for h in hooks if "create-symlinks" in h for i, a in enumerate(h) if a == "--link"}


def missing_edits(ours: Mapping[str, Any], nvidia: Mapping[str, Any],
                  skip_devices: frozenset[str] = frozenset()) -> list[str]:
    """Every edit of NVIDIA's applied spec that ours lacks (empty when ours injects all of it)."""
    a, b = container_edits(ours), container_edits(nvidia)
    problems = [f"mount {dest}: NVIDIA {src}, ours {a['mounts'].get(dest)}" for dest, src in b["mounts"].items()
                if a["mounts"].get(dest) != src]
    problems += [f"device node {p} {info}" for p, info in b["devices"].items()
                 if p not in skip_devices and a["devices"].get(p) != info]
    problems += [f"env {e}" for e in sorted(b["env"] - a["env"])]
    problems += [f"additional group {g}" for g in sorted(b["gids"] - a["gids"])]
    for lifecycle, hooks in b["hooks"].items():
        theirs = [h for h in hooks if "create-symlinks" not in h]
        problems += [f"{lifecycle} hook {' '.join(h)}" for h in theirs if h not in a["hooks"].get(lifecycle, [])]
        problems += [f"{lifecycle} create-symlinks link {link}"
                     for link in sorted(_links(hooks) - _links(a["hooks"].get(lifecycle, [])))]
    return problems


def compare_on_real_gpu(tools: ReferenceTools, work_dir: Path) -> tuple[str, list[str]]:
    """On a GPU machine (driver root `/`): NVIDIA's nvml-mode spec and ours, applied for GPU 0.

    Returns GPU 0's UUID and the edits ours lacks (empty when they agree, with no accepted difference)."""
    from gpu_operator.agents.device_plugin.cdi_spec import write_specs
    from gpu_operator.agents.device_plugin.devices import build_resources
    from gpu_operator.agents.device_plugin.settings import ListStrategy, Settings
    from gpu_operator.agents.nvml import open_nvml

    theirs, ours = work_dir / "nvidia-cdi", work_dir / "our-cdi"
    theirs.mkdir(parents=True, exist_ok=True)
    run_tool([str(tools.nvidia_ctk), "cdi", "generate", "--device-name-strategy=uuid",
              f"--nvidia-cdi-hook-path={HOOK_PATH}", f"--output={theirs / 'nvidia.yaml'}"])
    settings = Settings(driver_root="/", driver_root_ctr_path="/", nvidia_cdi_hook_path=HOOK_PATH,
                        cdi_spec_dir=str(ours), device_list_strategy=(ListStrategy.CDI_CRI,))
    nvml = open_nvml("auto")
    try:
        gpus = nvml.devices()
        resources = build_resources(gpus, settings)
    finally:
        nvml.close()
    if not write_specs(resources, settings):
        raise RuntimeError("the device plugin wrote no CDI spec")
    uuid = gpus[0].uuid
    ours_oci = apply(tools.cdi_apply, ours, f"k8s.device-plugin.nvidia.com/gpu={uuid}")
    nvidia_oci = apply(tools.cdi_apply, theirs, f"nvidia.com/gpu={uuid}")
    return uuid, missing_edits(ours_oci, nvidia_oci)
