"""Our device plugin's CDI spec against NVIDIA's (`nvidia-ctk cdi generate`), applied by the CDI library.

Both specs are made from the same driver root, then `cdi-apply` (tools/e2e/cdi-apply: the CDI library
tags.cncf.io/container-device-interface v1.1.1, as a container runtime applies specs) injects, into the same OCI
runtime spec, our `k8s.device-plugin.nvidia.com/gpu=all` and NVIDIA's device. The container edits NVIDIA's spec
makes (mounts by container path with their source and options, hooks by their arguments, device nodes, env) must
all be in ours. Accepted differences, each because NVIDIA's own device plugin spec differs the same way:

* on the fake root NVIDIA's spec is made in `management` mode (nvidia-container-toolkit pkg/nvcdi/management.go;
  its `nvml` mode needs a working libnvidia-ml). Its device `all` holds every `/dev/nvidia*` node and every
  `/dev/nvidia-caps/nvidia-cap*`, including the MIG `config` and `monitor` capabilities a management container
  needs; a workload's device (the plugin's, nvml mode) brings only its GPUs' nodes, so those two are not required;
* management mode also mounts libnvsdm/libibumad/libibmad for DCGM (newNVSDMLibraryDiscoverer); the fake root
  holds none, so nothing is excluded for them;
* our spec adds what NVIDIA's nvml mode adds and management mode does not (`update-application-profile`, the
  graphics files, a GPU's DRM nodes where sysfs lists them): extra edits in ours are allowed.

`test_nvidias_plugin_spec_and_ours_replace_each_other` puts NVIDIA's device plugin's spec file (made by
`nvidia-ctk cdi generate` for the plugin's vendor and class, at the name the plugin saves it under) and ours in one
directory, in both orders, and has the CDI library resolve the plugin's device names from it.

`test_real_gpu_spec_matches_nvidia_ctk` (markers `gpu` and `e2e`) makes the same comparison on a machine with a
GPU, against NVIDIA's nvml-mode spec for GPU 0, with no accepted difference: `make gpu-check` runs it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpu_operator.agents.device_plugin.cdi_spec import write_specs
from gpu_operator.agents.device_plugin.devices import build_resources
from gpu_operator.agents.device_plugin.settings import ListStrategy, Settings
from gpu_operator.agents.nvml import open_nvml
from tests.e2e.tools import BUILD_SCRIPT, locate_tools
from tests.support.cdi_reference import (
    HOOK_PATH,
    ReferenceTools,
    apply,
    compare_on_real_gpu,
    container_edits,
    find_reference_tools,
    missing_edits,
    run_tool,
)
from tests.support.fake_driver_root import FakeDriverRoot, can_make_device_nodes, make_driver_root

pytestmark = pytest.mark.e2e

_ENV = {"PATH": "/usr/bin:/bin"}
#: Management-mode nodes a workload's device does not get (see the module docstring).
_MANAGEMENT_ONLY_CAPS = ("config", "monitor")


def _tools() -> tuple[Path, Path]:
    """The reference tools `make e2e-tools` builds; missing ones fail the test, as a missing e2e tool does."""
    try:
        tools = locate_tools()
    except RuntimeError as error:
        pytest.fail(str(error), pytrace=False)
    missing = [name for name in ("nvidia-ctk", "cdi-apply") if not tools.path(name).is_file()]
    if missing:
        pytest.fail(f"{', '.join(missing)} not built: run `make e2e-tools`", pytrace=False)
    return tools.path("nvidia-ctk"), tools.path("cdi-apply")


def _run(command: list[str]) -> str:
    return run_tool(command)


def _fake_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeDriverRoot:
    """Eight GPUs' driver root, with the tools' environment (a plain PATH, no XDG_DATA_DIRS)."""
    if not can_make_device_nodes():
        pytest.skip("creating character device nodes (mknod) is not permitted here")
    monkeypatch.setenv("PATH", _ENV["PATH"])
    monkeypatch.delenv("XDG_DATA_DIRS", raising=False)
    return make_driver_root(tmp_path / "root", minors=tuple(range(8)))


def _our_specs(root: FakeDriverRoot, into: Path) -> None:
    """Our plugin's specs for the `h100-8x` profile's GPUs on the driver root, written into `into`."""
    settings = Settings(driver_root=str(root.root), driver_root_ctr_path=str(root.root),
                        nvidia_cdi_hook_path=HOOK_PATH, cdi_spec_dir=str(into),
                        device_list_strategy=(ListStrategy.CDI_CRI,))
    nvml = open_nvml("fake:h100-8x")
    try:
        resources = build_resources(nvml.devices(), settings)
    finally:
        nvml.close()
    written = write_specs(resources, settings)
    assert written, "no CDI spec written"
    assert Path(written["gpu"]).parent == into


def test_our_spec_injects_everything_nvidia_ctk_does_on_a_driver_root(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20 item 1 against NVIDIA's generator (nvidia-container-toolkit v1.20.2 cmd/nvidia-ctk/cdi/generate)."""
    nvidia_ctk, cdi_apply = _tools()
    root = _fake_root(tmp_path, monkeypatch)
    theirs, ours = tmp_path / "nvidia", tmp_path / "ours"
    theirs.mkdir()
    _run([str(nvidia_ctk), "cdi", "generate", "--mode=management", f"--driver-root={root.root}",
          f"--nvidia-cdi-hook-path={HOOK_PATH}", f"--output={theirs / 'nvidia.yaml'}"])
    generated = yaml.safe_load((theirs / "nvidia.yaml").read_text())
    assert len(generated["containerEdits"]["mounts"]) > 20, "NVIDIA's spec found no driver files on the fake root"
    _our_specs(root, ours)
    ours_oci = apply(cdi_apply, ours, "k8s.device-plugin.nvidia.com/gpu=all")
    nvidia_oci = apply(cdi_apply, theirs, "nvidia.com/gpu=all")
    caps = {f"/dev/nvidia-caps/nvidia-cap{root.caps[name]}" for name in _MANAGEMENT_ONLY_CAPS}
    assert missing_edits(ours_oci, nvidia_oci, frozenset(caps)) == []
    edits = container_edits(ours_oci)
    assert {f"/dev/nvidia{m}" for m in range(8)} <= set(edits["devices"])
    assert f"/usr/lib/x86_64-linux-gnu/libcuda.so.{root.version}" in edits["mounts"]
    assert "/usr/bin/nvidia-smi" in edits["mounts"]


def _nvidia_plugin_spec(nvidia_ctk: Path, root: Path, spec_dir: Path) -> Path:
    """NVIDIA's device plugin's `gpu` spec on the driver root, saved as the plugin saves it (k8s-device-plugin
    v0.20.0 internal/cdi/cdi.go `CreateSpecFile`: `/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json`)."""
    path = spec_dir / "k8s.device-plugin.nvidia.com-gpu.json"
    _run([str(nvidia_ctk), "cdi", "generate", "--mode=management", f"--driver-root={root}",
          "--vendor=k8s.device-plugin.nvidia.com", "--class=gpu", "--format=json",
          f"--nvidia-cdi-hook-path={HOOK_PATH}", f"--output={path}"])
    return path


def test_nvidias_plugin_spec_and_ours_replace_each_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27 item 1 with the CDI library itself (container-device-interface pkg/cdi/cache.go `refresh` drops a
    device two specs of one directory define): NVIDIA's plugin's leftover spec, then ours, then NVIDIA's again."""
    nvidia_ctk, cdi_apply = _tools()
    root = _fake_root(tmp_path, monkeypatch)
    spec_dir = tmp_path / "run-cdi"
    spec_dir.mkdir()
    device = "k8s.device-plugin.nvidia.com/gpu=all"
    theirs = _nvidia_plugin_spec(nvidia_ctk, root.root, spec_dir)
    shutil.copy(theirs, spec_dir / "k8s.device-plugin.nvidia.com-gpu.yaml")
    with pytest.raises(RuntimeError, match="conflicting device"):
        apply(cdi_apply, spec_dir, device)
    _our_specs(root, spec_dir)
    assert list(spec_dir.iterdir()) == [theirs]
    assert "update-application-profile" in str(container_edits(apply(cdi_apply, spec_dir, device))["hooks"])
    _nvidia_plugin_spec(nvidia_ctk, root.root, spec_dir)
    assert list(spec_dir.iterdir()) == [theirs]
    assert "update-application-profile" not in str(container_edits(apply(cdi_apply, spec_dir, device))["hooks"])


@pytest.mark.gpu
def test_real_gpu_spec_matches_nvidia_ctk(tmp_path: Path) -> None:
    """On a GPU machine: NVIDIA's nvml-mode spec for GPU 0 and ours inject the same edits (driver root `/`);
    `make gpu-check` makes the same comparison (`tests.support.cdi_reference.compare_on_real_gpu`)."""
    bin_dir = subprocess.run([str(BUILD_SCRIPT), "--bin-dir"], capture_output=True, text=True, check=True).stdout
    tools: ReferenceTools | None = find_reference_tools(Path(bin_dir.strip()))
    if tools is None:
        pytest.skip("nvidia-ctk and cdi-apply are neither built (`make e2e-tools`) nor on PATH")
    uuid, missing = compare_on_real_gpu(tools, tmp_path)
    assert missing == [], f"GPU {uuid}"
