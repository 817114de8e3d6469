"""Loaded kernel modules, read from `/proc/modules` (what `lsmod` prints).

The GPUDirect checks ask whether a module is loaded: `nvidia_fs` (GPUDirect Storage), `gdrdrv` (GDRCopy),
`nvidia_peermem` (GPUDirect RDMA) and `mlx5_core` (a host-installed Mellanox driver). Each line of
`/proc/modules` starts with a module name; NVIDIA's checks grep `lsmod` for the same names.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["loaded_modules", "module_loaded"]


def loaded_modules(text: str) -> frozenset[str]:
    """The module names in `/proc/modules` text."""
    return frozenset(line.split()[0] for line in text.splitlines() if line.strip())


def module_loaded(proc: str, name: str) -> bool:
    """Whether `name` is loaded, per `<proc>/modules` (False when that cannot be read)."""
    try:
        return name in loaded_modules(Path(proc, "modules").read_text())
    except OSError:
        return False
