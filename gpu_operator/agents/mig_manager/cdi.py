"""Refreshing CDI after a MIG change (`CDI_ENABLED=true`), as NVIDIA's mig-manager does.

New MIG devices need their capability device nodes (`/dev/nvidia-caps/nvidia-cap<N>`), their control device
nodes and a management CDI spec that lists them. The driver creates the capability nodes when a client such as
`nvidia-smi` first opens the GPUs after the change; a spec generated before that lacks them, and containers
given it fail with CreateContainerError. So the refresh runs, in order: `nvidia-smi` from the driver root, then
the toolkit's `nvidia-ctk` (installed on the host next to the CDI hook that `NVIDIA_CDI_HOOK_PATH` names) to
create the control device nodes and to write the management spec. Everything runs in the host's root (mounted
at `/host`) with the driver and device roots `driver-ready` recorded:

* driver root and device root the same (a host driver, or the driver container's root for both): `nvidia-smi`
  runs chrooted into the driver root, so the nodes appear under the device root;
* different roots (the driver container's files, the host's `/dev`): `nvidia-smi` and `libnvidia-ml.so.1` are
  found in the driver root (in `/` or the usual bin and lib folders, links followed) and `nvidia-smi` runs in the
  host's root with that library preloaded, so the nodes appear in the host's `/dev`.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_operator.agents.mig_manager.host_commands import Runner, command_runner

__all__ = ["CdiError", "CdiRefresh", "MANAGEMENT_SPEC", "Runner"]

#: The management spec nvidia-ctk writes (vendor management.nvidia.com, class gpu).
MANAGEMENT_SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"
_DEFAULT_HOOK = "/usr/local/nvidia/toolkit/nvidia-cdi-hook"
#: Where a driver root keeps nvidia-smi and libnvidia-ml.so.1, besides its top folder.
_BINARY_FOLDERS = ("/usr/bin", "/usr/sbin", "/bin", "/sbin")
_LIBRARY_FOLDERS = ("/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64",
                    "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu")


class CdiError(RuntimeError):
    """nvidia-smi or nvidia-ctk failed, or the driver root lacks nvidia-smi or NVML."""


_run = command_runner(120)


@dataclass(frozen=True, slots=True)
class CdiRefresh:
    """nvidia-smi and the two nvidia-ctk calls, from the environment (`NVIDIA_CDI_HOOK_PATH`, `driver-ready`'s
    roots)."""

    hook_path: str
    driver_root: str
    dev_root: str
    host_root: str = "/host"
    runner: Runner = _run

    @classmethod
    def from_environment(cls, env: Mapping[str, str], runner: Runner = _run, host_root: str = "/host") -> CdiRefresh:
        driver_root = env.get("NVIDIA_DRIVER_ROOT") or "/"
        return cls(
            hook_path=env.get("NVIDIA_CDI_HOOK_PATH") or _DEFAULT_HOOK,
            driver_root=driver_root,
            dev_root=env.get("NVIDIA_DEV_ROOT") or driver_root,
            host_root=host_root,
            runner=runner,
        )

    def _in_driver_root(self, name: str, folders: tuple[str, ...]) -> str:
        """`name` in the driver root, links resolved, as a path in the host's root."""
        top = posixpath.join(self.host_root, self.driver_root.lstrip("/"))
        for folder in ("/", *folders):
            candidate = posixpath.join(top, folder.lstrip("/"), name)
            try:
                found = os.path.realpath(candidate, strict=True)
            except OSError:
                continue
            inside = posixpath.relpath(found, os.path.realpath(self.host_root))
            if inside != ".." and not inside.startswith("../"):
                return "/" + inside
        raise CdiError(f"no {name} in the driver root {self.driver_root} (looked in /, {', '.join(folders)})")

    def nvidia_smi(self) -> list[str]:
        """The nvidia-smi call that creates the MIG capability device nodes under the device root."""
        if posixpath.normpath(self.driver_root) == posixpath.normpath(self.dev_root):
            return ["chroot", posixpath.normpath(posixpath.join(self.host_root, self.driver_root.lstrip("/"))),
                    "nvidia-smi"]
        library = self._in_driver_root("libnvidia-ml.so.1", _LIBRARY_FOLDERS)
        binary = self._in_driver_root("nvidia-smi", _BINARY_FOLDERS)
        return ["chroot", self.host_root, "env", f"LD_PRELOAD={library}", binary]

    def steps(self) -> list[tuple[str, list[str]]]:
        """(what, command) in the order they run."""
        ctk = posixpath.join(posixpath.dirname(self.hook_path), "nvidia-ctk")
        return [
            ("nvidia-smi", self.nvidia_smi()),
            ("nvidia-ctk system create-device-nodes",
             ["chroot", self.host_root, ctk, "system", "create-device-nodes", "--control-devices",
              f"--dev-root={self.dev_root}"]),
            ("nvidia-ctk cdi generate",
             ["chroot", self.host_root, ctk, "cdi", "generate", "--mode=management",
              f"--driver-root={self.driver_root}", f"--dev-root={self.dev_root}",
              f"--nvidia-cdi-hook-path={self.hook_path}", f"--output={MANAGEMENT_SPEC}"]),
        ]

    def commands(self) -> list[list[str]]:
        return [command for _, command in self.steps()]

    def __call__(self) -> None:
        for what, command in self.steps():
            status, output = self.runner(command)
            if status != 0:
                raise CdiError(f"{what} failed ({status}): {output or 'no output'}")
