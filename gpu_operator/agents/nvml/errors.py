"""NVML failures as exceptions of our own.

NVML reports every failure as a return code; pynvml raises them as `NVMLError_<Name>` subclasses. The agents
never see those: each code is mapped once, here, onto a small hierarchy that says what the caller can do about
it. A missing library or an unloaded driver means "no NVML on this node"; a lost GPU affects one device only;
"not supported" (or a function the installed driver does not export) means "this field does not exist here".
"""

from __future__ import annotations

import pynvml

__all__ = [
    "NvmlError",
    "NvmlUnavailable",
    "NvmlLibraryNotFound",
    "NvmlDriverNotLoaded",
    "NvmlNoPermission",
    "NvmlVersionMismatch",
    "NvmlUninitialized",
    "NvmlNotSupported",
    "NvmlFunctionNotFound",
    "NvmlArgumentVersionMismatch",
    "NvmlNotFound",
    "NvmlInvalidArgument",
    "NvmlGpuLost",
    "NvmlResetRequired",
    "NvmlTimeout",
    "error_for_code",
    "translate",
]


class NvmlError(Exception):
    """An NVML call failed; `code` is the NVML return code when there is one."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class NvmlUnavailable(NvmlError):
    """NVML cannot be used on this node at all (the agent has no devices to work with)."""


class NvmlLibraryNotFound(NvmlUnavailable):
    """`libnvidia-ml.so.1` was found neither under the driver roots nor by the dynamic loader."""


class NvmlDriverNotLoaded(NvmlUnavailable):
    """The library loaded, but the NVIDIA kernel driver is not running."""


class NvmlNoPermission(NvmlUnavailable):
    """The process may not open the NVIDIA device nodes."""


class NvmlVersionMismatch(NvmlUnavailable):
    """The user-space library and the kernel module come from different driver releases."""


class NvmlUninitialized(NvmlError):
    """A call was made before `nvmlInit` (a bug in the caller)."""


class NvmlNotSupported(NvmlError):
    """The device or driver does not offer this query; the field is absent, not broken."""


class NvmlFunctionNotFound(NvmlNotSupported):
    """The installed driver's library does not export this function (an older driver)."""


class NvmlArgumentVersionMismatch(NvmlNotSupported):
    """The driver does not know this version of a query's structure (an older driver)."""


class NvmlNotFound(NvmlError):
    """The object asked for (a MIG device index, a GPU instance id) does not exist."""


class NvmlInvalidArgument(NvmlError):
    """The query does not apply to this object (for example a link number past the last NVLink)."""


class NvmlGpuLost(NvmlError):
    """The GPU fell off the bus or stopped answering; only this device is affected."""


class NvmlResetRequired(NvmlGpuLost):
    """The GPU needs a reset before it can be used again."""


class NvmlTimeout(NvmlError):
    """An event wait ended without an event."""


#: NVML return code -> the exception that says what it means for us. Codes not listed are plain `NvmlError`.
_BY_CODE: dict[int, type[NvmlError]] = {
    pynvml.NVML_ERROR_UNINITIALIZED: NvmlUninitialized,
    pynvml.NVML_ERROR_INVALID_ARGUMENT: NvmlInvalidArgument,
    pynvml.NVML_ERROR_NOT_SUPPORTED: NvmlNotSupported,
    pynvml.NVML_ERROR_NO_PERMISSION: NvmlNoPermission,
    pynvml.NVML_ERROR_NOT_FOUND: NvmlNotFound,
    pynvml.NVML_ERROR_DRIVER_NOT_LOADED: NvmlDriverNotLoaded,
    pynvml.NVML_ERROR_TIMEOUT: NvmlTimeout,
    pynvml.NVML_ERROR_LIBRARY_NOT_FOUND: NvmlLibraryNotFound,
    pynvml.NVML_ERROR_FUNCTION_NOT_FOUND: NvmlFunctionNotFound,
    pynvml.NVML_ERROR_GPU_IS_LOST: NvmlGpuLost,
    pynvml.NVML_ERROR_RESET_REQUIRED: NvmlResetRequired,
    pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH: NvmlVersionMismatch,
    pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH: NvmlArgumentVersionMismatch,
}


def error_for_code(code: int, message: str | None = None) -> NvmlError:
    """The exception for an NVML return code, with NVML's own wording unless a message is given."""
    text = message if message is not None else str(pynvml.NVMLError(code))
    return _BY_CODE.get(code, NvmlError)(text, code)


def translate(error: pynvml.NVMLError) -> NvmlError:
    """Our exception for a pynvml one (keeps pynvml's message and the numeric code)."""
    return error_for_code(int(error.value), str(error))
