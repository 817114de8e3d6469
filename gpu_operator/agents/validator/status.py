"""The status files: how the validator tells the other operands on the node that a component works.

Each component has one file in the status directory (`/run/nvidia/validations` by default). A check first
deletes its file, then writes it again only on success, so a dependant that waits for the file never starts
against a component that stopped working. Files are written atomically (a temporary file in the same directory,
then a rename), so a reader sees either no file or the whole of it. All are empty except `driver-ready`, whose
`KEY=value` lines tell the toolkit, device plugin and MIG manager where the driver lives (see :mod:`.driver_root`).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

__all__ = [
    "CUDA_READY",
    "DEFAULT_OUTPUT_DIR",
    "DRIVER_CONTAINER_READY",
    "DRIVER_READY",
    "FILE_MODE",
    "GDRCOPY_READY",
    "MOFED_READY",
    "NVIDIA_FS_READY",
    "NVIDIA_PEERMEM_READY",
    "PLUGIN_READY",
    "TOOLKIT_READY",
    "StatusDir",
]

_log = logging.getLogger(__name__)

DEFAULT_OUTPUT_DIR = "/run/nvidia/validations"
DRIVER_READY = "driver-ready"
#: Written by the driver container's startup probe once the containerized driver works.
DRIVER_CONTAINER_READY = ".driver-ctr-ready"
TOOLKIT_READY = "toolkit-ready"
CUDA_READY = "cuda-ready"
PLUGIN_READY = "plugin-ready"
MOFED_READY = "mofed-ready"
NVIDIA_FS_READY = "nvidia-fs-ready"
GDRCOPY_READY = "gdrcopy-ready"
NVIDIA_PEERMEM_READY = "nvidia-peermem-ready"
FILE_MODE = 0o644
_DIRECTORY_MODE = 0o755


class StatusDir:
    """The status directory of this node."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def prepare(self, cleanup_all: bool = False) -> None:
        """Create the directory (first removing it and everything in it with `cleanup_all`)."""
        if cleanup_all:
            shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir(mode=_DIRECTORY_MODE, parents=True, exist_ok=True)

    def exists(self, name: str) -> bool:
        return (self.path / name).exists()

    def read(self, name: str) -> str:
        return (self.path / name).read_text()

    def remove(self, name: str) -> None:
        (self.path / name).unlink(missing_ok=True)

    def write(self, name: str, content: str = "") -> None:
        """Write the file atomically: temporary file beside it, then rename over it."""
        descriptor, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=self.path)
        try:
            with os.fdopen(descriptor, "w") as stream:
                stream.write(content)
            os.chmod(temporary, FILE_MODE)
            os.replace(temporary, self.path / name)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        _log.info("created %s", self.path / name)
