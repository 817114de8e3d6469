"""NVML return codes become our exception types, keeping NVML's message and the numeric code."""

from __future__ import annotations

import pynvml
import pytest

from gpu_operator.agents.nvml import errors


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, errors.NvmlLibraryNotFound),
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, errors.NvmlDriverNotLoaded),
        (pynvml.NVML_ERROR_NO_PERMISSION, errors.NvmlNoPermission),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, errors.NvmlVersionMismatch),
        (pynvml.NVML_ERROR_UNINITIALIZED, errors.NvmlUninitialized),
        (pynvml.NVML_ERROR_NOT_SUPPORTED, errors.NvmlNotSupported),
        (pynvml.NVML_ERROR_FUNCTION_NOT_FOUND, errors.NvmlFunctionNotFound),
        (pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH, errors.NvmlArgumentVersionMismatch),
        (pynvml.NVML_ERROR_NOT_FOUND, errors.NvmlNotFound),
        (pynvml.NVML_ERROR_INVALID_ARGUMENT, errors.NvmlInvalidArgument),
        (pynvml.NVML_ERROR_GPU_IS_LOST, errors.NvmlGpuLost),
        (pynvml.NVML_ERROR_RESET_REQUIRED, errors.NvmlResetRequired),
        (pynvml.NVML_ERROR_TIMEOUT, errors.NvmlTimeout),
        (pynvml.NVML_ERROR_UNKNOWN, errors.NvmlError),
    ],
)
def test_each_code_maps_to_its_exception(code: int, expected: type[errors.NvmlError]) -> None:
    error = errors.translate(pynvml.NVMLError(code))
    assert type(error) is expected
    assert error.code == code


def test_the_hierarchy_says_what_a_caller_can_do() -> None:
    assert issubclass(errors.NvmlLibraryNotFound, errors.NvmlUnavailable)
    assert issubclass(errors.NvmlDriverNotLoaded, errors.NvmlUnavailable)
    assert issubclass(errors.NvmlFunctionNotFound, errors.NvmlNotSupported)
    assert issubclass(errors.NvmlResetRequired, errors.NvmlGpuLost)
    assert not issubclass(errors.NvmlGpuLost, errors.NvmlUnavailable)


def test_message_is_nvmls_own() -> None:
    assert str(errors.translate(pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST))) == "GPU is lost"
    assert str(errors.error_for_code(pynvml.NVML_ERROR_NOT_SUPPORTED)) == "Not Supported"
    assert str(errors.error_for_code(pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "no driver here")) == "no driver here"
