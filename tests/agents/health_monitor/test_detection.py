"""Each fault the monitor detects becomes the right Node condition: type, reason and a message naming the GPU.

The verdicts are the fault catalog's (gpu_operator/faults); the readings are judged as DCGM's health watches judge
them (NVIDIA/DCGM 4.6.0 modules/health/DcgmHealthWatch.cpp: `MonitorMemVolatileDbes`, `MonitorMem`,
`MonitorNVLinkStatus`, `MonitorNVLink` with `DCGM_LIMIT_MAX_NVLINK_CRC_ERROR` 100/s from
DcgmGpuHardwareLimits.h, `MonitorThermal`, `MonitorGpuRecoveryAction`); the conditions are written as Kubernetes'
node problem detector writes its own (pkg/exporters/k8sexporter/problemclient/problem_client.go `SetConditions`: a
strategic merge patch of `status.conditions` on `nodes/status`, which leaves the kubelet's conditions alone).
"""

from __future__ import annotations

import pytest

from gpu_operator.agents.health_monitor.monitor import HealthMonitor
from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.simulated import SimulatedLibrary, SimulatedPciBus, load_profile
from tests.agents.health_monitor.conftest import PCI, UUIDS, Harness, conditions, status_writes
from tests.agents.kube.fake_apiserver import FakeApiServer


def _started(harness: Harness, **changes: object) -> HealthMonitor:
    monitor = harness.monitor(**changes)
    monitor.start_over()
    return monitor


def _event(monitor: HealthMonitor, library: SimulatedLibrary, line: str) -> None:
    library.inject(line)
    assert monitor.poll_event()
    monitor.publisher.sync()


def _pass(monitor: HealthMonitor, library: SimulatedLibrary, *lines: str) -> None:
    library.inject(*lines)
    monitor.health_pass()
    monitor.publisher.sync()


def test_every_condition_of_ours_starts_false_and_the_kubelets_stay(harness: Harness, server: FakeApiServer) -> None:
    _started(harness)
    shown = conditions(server)
    assert shown["Ready"] == {"type": "Ready", "status": "True", "reason": "KubeletReady"}
    ours = {kind: (c["status"], c["reason"]) for kind, c in shown.items() if kind != "Ready"}
    assert ours == dict.fromkeys(("GPUResetRequired", "GPUFallenOffBus", "GPURebootRequired", "GPUNVLinkError",
                                  "GPUHardwareFailure", "GPUThermal", "GPUDriverFailure"), ("False", "NoFault"))
    assert all(c["lastTransitionTime"] == c["lastHeartbeatTime"] for kind, c in shown.items() if kind != "Ready")


@pytest.mark.parametrize(("line", "condition", "reason", "detail"), [
    ("xid 79 on GPU 3", "GPUFallenOffBus", "XID79", 'XID 79 "GPU has fallen off the bus": RESTART_BM'),
    ("xid 48 on GPU 3", "GPUResetRequired", "XID48", 'XID 48 "Double Bit ECC Error": WORKFLOW_XID_48'),
    ("xid 151 on GPU 3", "GPURebootRequired", "XID151", 'XID 151 "Key rotation Error": RESTART_VM'),
    ("xid 74 on GPU 3", "GPUNVLinkError", "XID74", 'XID 74 "NVLINK Error": WORKFLOW_NVLINK_ERR'),
])
def test_an_xid_event_sets_its_classs_condition(harness: Harness, server: FakeApiServer,
                                                library: SimulatedLibrary, line: str, condition: str, reason: str,
                                                detail: str) -> None:
    monitor = _started(harness)
    _event(monitor, library, line)
    shown = conditions(server)[condition]
    assert (shown["status"], shown["reason"]) == ("True", reason)
    assert shown["message"] == f"{UUIDS[3]} ({PCI[3]}): {detail}"


@pytest.mark.parametrize(("lines", "condition", "reason", "observed"), [
    (["dbe on GPU 1"], "GPUResetRequired", "VolatileDBE",
     "VolatileDBE (DCGM_FR_VOLATILE_DBE_DETECTED: COMPONENT_RESET): 1 volatile double-bit ECC error"),
    (["row-remap-pending on GPU 1"], "GPUResetRequired", "RowRemapPending",
     "RowRemapPending (DCGM_FR_PENDING_ROW_REMAP: COMPONENT_RESET): a row remapping waits for a GPU reset"),
    (["row-remap-failed on GPU 1"], "GPUHardwareFailure", "RowRemapFailed",
     "RowRemapFailed (DCGM_FR_ROW_REMAP_FAILURE: CONTACT_SUPPORT): a row remapping failed"),
    (["nvlink-down 5 on GPU 1", "nvlink-down 2 on GPU 1"], "GPURebootRequired", "NVLinkDown",
     "NVLinkDown (DCGM_FR_NVLINK_DOWN: RESTART_VM): NVLink 2, 5 inactive"),
    (["lost on GPU 1"], "GPUFallenOffBus", "GPULost",
     "GPULost (DCGM_FR_FALLEN_OFF_BUS: RESTART_BM): NVML answers that the GPU is lost"),
    (["recovery-action 2 on GPU 1"], "GPURebootRequired", "XID154",
     "XID154 (NVML recovery action field): GPU recovery action 0x2 (Node Reboot Required)"),
])
def test_a_health_reading_sets_its_classs_condition(harness: Harness, server: FakeApiServer,
                                                    library: SimulatedLibrary, lines: list[str], condition: str,
                                                    reason: str, observed: str) -> None:
    monitor = _started(harness)
    _pass(monitor, library, *lines)
    shown = conditions(server)[condition]
    assert (shown["status"], shown["reason"]) == ("True", reason)
    assert shown["message"] == f"{UUIDS[1]} ({PCI[1]}): {observed}"


def test_health_readings_are_levels_the_condition_follows(harness: Harness, server: FakeApiServer,
                                                          library: SimulatedLibrary) -> None:
    """A reading that stops (the simulated reset clears it) clears its condition at the next pass."""
    monitor = _started(harness)
    _pass(monitor, library, "row-remap-pending on GPU 2")
    before = conditions(server)["GPUResetRequired"]
    assert before["status"] == "True"
    _pass(monitor, library, "reset on GPU 2")
    after = conditions(server)["GPUResetRequired"]
    assert (after["status"], after["reason"]) == ("False", "NoFault")
    assert after["lastTransitionTime"] >= before["lastTransitionTime"]


def test_nvlink_crc_errors_count_at_dcgms_rate(harness: Harness, server: FakeApiServer, library: SimulatedLibrary,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """100 CRC errors a second between two passes fail, 99 do not (DCGM's limit), on a clock the test drives."""
    now = [1000.0]
    monitor = _started(harness)
    monkeypatch.setattr(monitor, "_monotonic", lambda: now[0])
    monitor.health_pass()
    now[0] += 10.0
    _pass(monitor, library, "nvlink-crc 990 on GPU 4")
    assert conditions(server)["GPUNVLinkError"]["status"] == "False"
    now[0] += 10.0
    _pass(monitor, library, "nvlink-crc 1000 on GPU 4")
    shown = conditions(server)["GPUNVLinkError"]
    assert (shown["status"], shown["reason"]) == ("True", "NVLinkCRCErrors")
    assert shown["message"].endswith("100 NVLink CRC errors a second (limit 100)")


def test_a_thermal_violation_holds_for_dcgms_minute(harness: Harness, server: FakeApiServer,
                                                    library: SimulatedLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monitor = _started(harness)
    monkeypatch.setattr(monitor, "_monotonic", lambda: now[0])
    monitor.health_pass()
    _pass(monitor, library, "thermal on GPU 0")
    assert conditions(server)["GPUThermal"]["reason"] == "ThermalViolation"
    _pass(monitor, library, "reset on GPU 0")  # the violation counter stops moving
    now[0] += 59.0
    _pass(monitor, library)
    assert conditions(server)["GPUThermal"]["status"] == "True"
    now[0] += 1.0
    _pass(monitor, library)
    assert conditions(server)["GPUThermal"]["status"] == "False"


def test_an_xid_154_takes_its_class_from_nvmls_recovery_action(harness: Harness, server: FakeApiServer,
                                                               library: SimulatedLibrary) -> None:
    """The NVML event carries no message; the monitor reads NVML_FI_DEV_GET_GPU_RECOVERY_ACTION for the GPU, as
    the catalog's XID 154 rule asks (node reboot: the reboot-required class, not the bucket's reset)."""
    monitor = _started(harness)
    library.inject("recovery-action 2 on GPU 6")
    _event(monitor, library, "xid 154 on GPU 6")
    shown = conditions(server)["GPURebootRequired"]
    assert shown["reason"] == "XID154"
    assert shown["message"] == (f'{UUIDS[6]} ({PCI[6]}): XID 154 "GPU Recovery Action Changed": GPU recovery '
                                "action 0x2 (Node Reboot Required)")
    assert conditions(server)["GPUResetRequired"]["status"] == "False"


def test_one_condition_per_class_lists_every_gpu_in_the_order_seen(harness: Harness, server: FakeApiServer,
                                                                    library: SimulatedLibrary) -> None:
    monitor = _started(harness)
    _event(monitor, library, "xid 79 on GPU 5")
    _pass(monitor, library, "lost on GPU 2")
    _event(monitor, library, "xid 79 on GPU 1")
    shown = conditions(server)["GPUFallenOffBus"]
    assert shown["reason"] == "XID79"
    assert shown["message"] == "; ".join([
        f'{UUIDS[5]} ({PCI[5]}): XID 79 "GPU has fallen off the bus": RESTART_BM',
        f"{UUIDS[2]} ({PCI[2]}): GPULost (DCGM_FR_FALLEN_OFF_BUS: RESTART_BM): NVML answers that the GPU is lost",
        f'{UUIDS[1]} ({PCI[1]}): XID 79 "GPU has fallen off the bus": RESTART_BM',
    ])


def test_a_driver_that_stops_after_its_validation_is_a_driver_failure(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    monitor = _started(harness)
    _pass(monitor, library, "driver-unloaded")
    shown = conditions(server)["GPUDriverFailure"]
    assert (shown["status"], shown["reason"]) == ("True", "DriverNotLoaded")
    assert shown["message"].startswith("DriverNotLoaded (DCGM_FR_CANNOT_OPEN_LIB: CONTACT_SUPPORT): NVML: ")
    _pass(monitor, library, "driver-loaded")
    assert conditions(server)["GPUDriverFailure"]["status"] == "False"


def test_the_same_reading_again_writes_nothing(harness: Harness, server: FakeApiServer,
                                              library: SimulatedLibrary) -> None:
    monitor = _started(harness)
    _pass(monitor, library, "dbe on GPU 1")
    writes = len(status_writes(server))
    for _ in range(5):
        _pass(monitor, library)
    assert len(status_writes(server)) == writes


def test_links_read_down_while_a_gpu_is_in_mig_mode_are_not_a_fault(server: FakeApiServer) -> None:
    """DCGM's workaround for NVIDIA bug 200682374 (dcgmlib/src/DcgmTopology.cpp `UpdateNvLinkLinkStateFromNvml`):
    NVML reports NVLinks down while any GPU of the node is in MIG mode, so no link counts as down then."""
    profile = load_profile("a100-4x-mixed-mig")
    library = SimulatedLibrary(profile)
    harness = Harness(server, library)
    monitor = harness.monitor()
    monitor._open_nvml = lambda: LibraryNvml.open(library, SimulatedPciBus(profile))  # type: ignore[method-assign]
    monitor.start_over()
    without_mig = [i for i, gpu in enumerate(profile.gpus) if gpu.mig is None or not gpu.mig.current]
    assert without_mig and len(without_mig) < len(profile.gpus)
    _pass(monitor, library, f"nvlink-down 0 on GPU {without_mig[0]}")
    assert conditions(server)["GPURebootRequired"]["status"] == "False"


def test_the_configs_xid_overrides_reach_the_node(harness: Harness, server: FakeApiServer,
                                                   library: SimulatedLibrary) -> None:
    """Issue 26 item 7: `remediation.xids` (ignore, classify) is the controller's and the node's alike: XID 109,
    which the catalog classes reset-required, raises nothing when ignored; XID 45, an application fault in the
    catalog, writes the condition of the class the config gives it."""
    monitor = _started(harness, xid_ignore=frozenset({109}), xid_classify=((45, "reboot-required"),))
    _event(monitor, library, "xid 109 on GPU 3")
    assert conditions(server)["GPUResetRequired"]["status"] == "False"
    _event(monitor, library, "xid 45 on GPU 3")
    shown = conditions(server)["GPURebootRequired"]
    assert (shown["status"], shown["reason"]) == ("True", "XID45")
    assert "class reboot-required by the config's remediation.xids.classify" in shown["message"]
