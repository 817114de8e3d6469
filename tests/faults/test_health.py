"""DCGM and NVML health conditions: every row of NVIDIA's DCGM mapping mapped, and the NVML readings the health
monitor writes, each taking NVIDIA's verdict from its DCGM twin.

Facts: NVSentinel distros/kubernetes/nvsentinel/charts/gpu-health-monitor/files/dcgmerrorsmapping.csv
(reference data `nvsentinel/dcgmerrorsmapping.csv`).
"""

from __future__ import annotations

import csv

import pytest

from gpu_operator.faults import NVML_CONDITIONS, classify_health, health_conditions, health_fault
from gpu_operator.faults.buckets import DCGM_CLASS_OVERRIDES, RECOMMENDED_ACTION_CLASSES
from tests.support.reference import reference_file


def _mapping() -> list[tuple[str, str]]:
    with reference_file("nvsentinel/dcgmerrorsmapping.csv").open(encoding="utf-8") as handle:
        return [(failure.strip(), action.strip()) for failure, action in csv.reader(handle) if failure]


def test_every_row_of_the_dcgm_mapping_is_mapped() -> None:
    rows = _mapping()
    assert len(rows) == 134
    for failure, action in rows:
        fault = health_fault(failure)
        assert fault.action == action, failure
        assert fault.fault_class.name == DCGM_CLASS_OVERRIDES.get(failure, RECOMMENDED_ACTION_CLASSES[action])
        assert (fault.reason, fault.bucket) == (failure, failure)
    assert [failure for failure, _ in rows] == list(health_conditions()[len(NVML_CONDITIONS):])


@pytest.mark.parametrize(("failure", "name"), [
    ("DCGM_FR_VOLATILE_DBE_DETECTED", "reset-required"),  # COMPONENT_RESET
    ("DCGM_FR_PENDING_ROW_REMAP", "reset-required"),  # COMPONENT_RESET
    ("DCGM_FR_ROW_REMAP_FAILURE", "hardware-failure"),  # CONTACT_SUPPORT
    ("DCGM_FR_NVLINK_DOWN", "reboot-required"),  # RESTART_VM
    ("DCGM_FR_FALLEN_OFF_BUS", "fallen-off-bus"),  # RESTART_BM
    ("DCGM_FR_VOLATILE_SBE_DETECTED", "informational"),  # NONE
    ("DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD", "nvlink"),  # CONTACT_SUPPORT, a link to retrain
    ("DCGM_FR_THERMAL_VIOLATIONS", "thermal"),  # CONTACT_SUPPORT, a cooling problem
    ("DCGM_FR_CLOCK_THROTTLE_THERMAL", "thermal"),  # NONE
    ("DCGM_FR_NVML_API", "driver-failure"),  # CONTACT_SUPPORT
    ("DCGM_FR_GPU_RECOVERY_REBOOT", "reboot-required"),  # RESTART_BM, but a reboot rather than a lost GPU
])
def test_the_dcgm_failures_the_remediation_names(failure: str, name: str) -> None:
    assert classify_health(failure).name == name


@pytest.mark.parametrize(("condition", "name", "action"), [
    ("VolatileDBE", "reset-required", "COMPONENT_RESET"),
    ("RowRemapPending", "reset-required", "COMPONENT_RESET"),
    ("RowRemapFailed", "hardware-failure", "CONTACT_SUPPORT"),
    ("NVLinkDown", "reboot-required", "RESTART_VM"),
    ("NVLinkCRCErrors", "nvlink", "CONTACT_SUPPORT"),
    ("FallenOffBus", "fallen-off-bus", "RESTART_BM"),
    ("GPULost", "fallen-off-bus", "RESTART_BM"),
    ("GPUMissing", "fallen-off-bus", "RESTART_BM"),
    ("ThermalViolation", "thermal", "CONTACT_SUPPORT"),
    ("DriverNotLoaded", "driver-failure", "CONTACT_SUPPORT"),
    ("NVMLInitFailed", "driver-failure", "CONTACT_SUPPORT"),
    ("ValidatorFailed", "driver-failure", "CONTACT_SUPPORT"),
])
def test_the_nvml_readings(condition: str, name: str, action: str) -> None:
    fault = health_fault(condition)
    assert (fault.fault_class.name, fault.action, fault.reason) == (name, action, condition)
    twin = NVML_CONDITIONS[condition].dcgm
    assert fault.bucket == twin
    if twin is not None:
        assert twin in fault.detail and health_fault(twin).fault_class is fault.fault_class


def test_a_dcgm_failure_newer_than_the_mapping_is_contact_support() -> None:
    fault = health_fault("DCGM_FR_SOMETHING_NEW")
    assert (fault.fault_class.name, fault.action) == ("hardware-failure", "CONTACT_SUPPORT")


def test_an_unknown_condition_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown health condition 'VolatileSBE'.*VolatileDBE, RowRemapPending"):
        classify_health("VolatileSBE")
