"""Refreshing CDI after a MIG change (`CDI_ENABLED=true`), as NVIDIA's mig-manager does.

New MIG devices need their control device nodes (`/dev/nvidia-caps/*`) and a management CDI spec that lists
them. Both come from the toolkit's `nvidia-ctk`, installed on the host next to the CDI hook that
`NVIDIA_CDI_HOOK_PATH` names, and run in the host's root (mounted at `/host`) with the driver and device roots
`driver-ready` recorded.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_operator.agents.mig_manager.host_commands import Runner, command_runner

__all__ = ["CdiError", "CdiRefresh", "MANAGEMENT_SPEC", "Runner"]

#: The management spec nvidia-ctk writes (vendor management.nvidia.com, class gpu).
MANAGEMENT_SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"
_DEFAULT_HOOK = "/usr/local/nvidia/toolkit/nvidia-cdi-hook"



class CdiError(RuntimeError):
    """nvidia-ctk failed."""


_run = command_runner(120)


@dataclass(frozen=True, slots=True)
class CdiRefresh:
    """The two nvidia-ctk calls, from the environment (`NVIDIA_CDI_HOOK_PATH`, `driver-ready`'s roots)."""

    hook_path: str
    driver_root: str
    dev_root: str
    host_root: str = "/host"
    runner: Runner = _run

    @classmethod
    def from_environment(cls, env: Mapping[str, str], runner: Runner = _run) -> CdiRefresh:
        driver_root = env.get("NVIDIA_DRIVER_ROOT") or "/"
        return cls(
            hook_path=env.get("NVIDIA_CDI_HOOK_PATH") or _DEFAULT_HOOK,
            driver_root=driver_root,
            dev_root=env.get("NVIDIA_DEV_ROOT") or driver_root,
            runner=runner,
        )

    def commands(self) -> list[list[str]]:
        ctk = posixpath.join(posixpath.dirname(self.hook_path), "nvidia-ctk")
        return [
            ["chroot", self.host_root, ctk, "system", "create-device-nodes", "--control-devices",
             f"--dev-root={self.dev_root}"],
            ["chroot", self.host_root, ctk, "cdi", "generate", "--mode=management", f"--driver-root={self.driver_root}",
             f"--dev-root={self.dev_root}", f"--nvidia-cdi-hook-path={self.hook_path}", f"--output={MANAGEMENT_SPEC}"],
        ]

    def __call__(self) -> None:
        for command in self.commands():
            status, output = self.runner(command)
            if status != 0:
                raise CdiError(f"{' '.join(command[2:5])} failed ({status}): {output or 'no output'}")
