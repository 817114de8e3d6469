"""The GPUDirect checks: kernel modules of GPUDirect Storage, GDRCopy and GPUDirect RDMA, and the MOFED driver.

* `nvidia-fs` - module `nvidia_fs` loaded -> `nvidia-fs-ready`;
* `gdrcopy` - module `gdrdrv` loaded -> `gdrcopy-ready`;
* `nvidia-peermem` - module `nvidia_peermem` loaded -> `nvidia-peermem-ready`;
* `mofed` - only when `GPU_DIRECT_RDMA_ENABLED=true` and the node has a Mellanox NIC (NFD label
  `feature.node.kubernetes.io/pci-15b3.present=true`): the host's `mlx5_core` module with `USE_HOST_MOFED=true`,
  else the MOFED driver container's `/run/mellanox/drivers/.driver-ready` -> `mofed-ready`.

Each is tried once, or until it passes with `WITH_WAIT`. The driver check runs the first three itself when the
driver container says they are enabled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from gpu_operator.agents.kube import NODES, KubeError
from gpu_operator.agents.validator.context import Context
from gpu_operator.agents.validator.errors import ValidationFailed
from gpu_operator.agents.validator.kernel_modules import module_loaded
from gpu_operator.agents.validator.status import GDRCOPY_READY, MOFED_READY, NVIDIA_FS_READY, NVIDIA_PEERMEM_READY

__all__ = ["MELLANOX_LABEL", "MODULE_CHECKS", "gdrcopy", "mofed", "nvidia_fs", "nvidia_peermem"]

_log = logging.getLogger(__name__)

MELLANOX_LABEL = "feature.node.kubernetes.io/pci-15b3.present"


def _module_check(ctx: Context, module: str, status_file: str) -> None:
    ctx.status.remove(status_file)

    def check() -> None:
        if not module_loaded(ctx.paths.proc, module):
            raise ValidationFailed(f"kernel module {module} is not loaded")

    ctx.retry.run(check, f"{module} driver is not ready")
    ctx.status.write(status_file)


def nvidia_fs(ctx: Context) -> None:
    _module_check(ctx, "nvidia_fs", NVIDIA_FS_READY)


def gdrcopy(ctx: Context) -> None:
    _module_check(ctx, "gdrdrv", GDRCOPY_READY)


def nvidia_peermem(ctx: Context) -> None:
    _module_check(ctx, "nvidia_peermem", NVIDIA_PEERMEM_READY)


#: Component name -> module check.
MODULE_CHECKS: dict[str, Callable[[Context], None]] = {
    "nvidia-fs": nvidia_fs,
    "gdrcopy": gdrcopy,
    "nvidia-peermem": nvidia_peermem,
}


def _mellanox_present(ctx: Context) -> bool:
    try:
        node = ctx.kube().get(NODES, ctx.settings.node_name)
    except KubeError as error:
        raise ValidationFailed(
            f"unable to fetch node {ctx.settings.node_name} to check for the Mellanox device label: {error}"
        ) from error
    return (node.get("metadata", {}).get("labels") or {}).get(MELLANOX_LABEL) == "true"


def mofed(ctx: Context) -> None:
    settings = ctx.settings
    if settings.gpu_direct_rdma_enabled != "true":
        _log.info("GPUDirect RDMA is disabled, skipping MOFED driver validation")
        return
    if not settings.node_name:
        raise ValidationFailed("invalid -n <node-name> flag: must not be empty string for mofed validation")
    if not _mellanox_present(ctx):
        _log.info("no Mellanox device label found, skipping MOFED driver validation")
        return
    ctx.status.remove(MOFED_READY)

    def check() -> None:
        if settings.use_host_mofed == "true":
            if not module_loaded(ctx.paths.proc, "mlx5_core"):
                raise ValidationFailed("kernel module mlx5_core is not loaded")
        elif not Path(ctx.paths.mellanox_driver_ready).exists():
            raise ValidationFailed(f"{ctx.paths.mellanox_driver_ready} does not exist")

    ctx.retry.run(check, "MOFED driver is not ready")
    ctx.status.write(MOFED_READY)
