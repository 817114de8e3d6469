"""Where the validator container sees the host: the mounts its DaemonSets give it.

The driver validation mounts the host's root at `/host` (read-only), the host's `/dev/char` at
`/host-dev-char` and the containerized driver's install dir at the `DRIVER_INSTALL_DIR_CTR_PATH` setting;
`/proc` and `/sys` are the host's kernel views. The MOFED driver container (network operator) marks itself
ready with `/run/mellanox/drivers/.driver-ready`. Tests point these at a directory tree of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Paths"]


@dataclass(frozen=True, slots=True)
class Paths:
    """Container paths of the host views the checks read and write."""

    host_root: str = "/host"
    host_dev_char: str = "/host-dev-char"
    proc: str = "/proc"
    sys: str = "/sys"
    mellanox_driver_ready: str = "/run/mellanox/drivers/.driver-ready"
