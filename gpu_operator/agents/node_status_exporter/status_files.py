"""The validator's status files: which barrier file sets which `*_ready` gauge.

Each validation step of the operator's validator writes a file into the status directory
(`/run/nvidia/validations`) once it passed, and removes it when it runs again or the validator pod stops. A
gauge is 1 while its file is there. As in the validator, anything but "does not exist" counts as there (a file
that cannot be inspected was still created).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from gpu_operator.agents.node_status_exporter.gauges import (
    CUDA_READY,
    DRIVER_READY,
    PLUGIN_READY,
    TOOLKIT_READY,
)

__all__ = ["DEFAULT_STATUS_DIR", "STATUS_FILES", "file_present", "read_status_files"]

DEFAULT_STATUS_DIR = "/run/nvidia/validations"

#: Gauge -> the status file that opens its barrier.
STATUS_FILES: dict[str, str] = {
    DRIVER_READY: "driver-ready",
    TOOLKIT_READY: "toolkit-ready",
    PLUGIN_READY: "plugin-ready",
    CUDA_READY: "cuda-ready",
}


def file_present(path: str) -> bool:
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def read_status_files(directory: str) -> Mapping[str, float]:
    """Each status gauge: 1.0 when its file is in `directory`, else 0.0."""
    return {gauge: float(file_present(os.path.join(directory, name))) for gauge, name in STATUS_FILES.items()}
