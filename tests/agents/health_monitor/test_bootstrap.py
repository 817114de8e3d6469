"""No false positive at bootstrap: NVML's start-up errors and the application's XIDs quarantine nothing.

The driver counts as working once the operator validator wrote `driver-ready` (NVIDIA/gpu-operator
cmd/nvidia-validator `validateDriver`); before it, and for the grace period after it, the readings make no
finding. XIDs 13, 31, 43 and 45 on their own are the application's (the catalog's `application` class, NVIDIA's
RESTART_APP and the device plugin's skip list, k8s-device-plugin v0.20.0 internal/rm/health.go
`getDisabledHealthCheckXids`): Events only, no condition.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpu_operator.agents.health_monitor.bootstrap import standing_aside, upgrading
from gpu_operator.agents.health_monitor.monitor import HealthMonitor
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
from tests.agents.health_monitor.conftest import Harness, conditions, set_labels
from tests.agents.kube.fake_apiserver import FakeApiServer

OURS = ("GPUResetRequired", "GPUFallenOffBus", "GPURebootRequired", "GPUNVLinkError", "GPUHardwareFailure",
        "GPUThermal", "GPUDriverFailure")


def _quiet(server: FakeApiServer) -> bool:
    shown = conditions(server)
    return all(shown[kind]["status"] == "False" for kind in OURS)


def _ready(directory: Path, age: float) -> Path:
    directory.mkdir(exist_ok=True)
    ready = directory / "driver-ready"
    ready.write_text("IS_HOST_DRIVER=false\n")
    stamp = ready.stat().st_mtime - age
    os.utime(ready, (stamp, stamp))
    return ready


def _relabel(server: FakeApiServer, monitor: HealthMonitor, labels: dict[str, str]) -> None:
    """Change the Node's labels and hand the monitor the new Node, as its watch would."""
    set_labels(server, labels)
    monitor.view.offer(server.get("nodes", "gpu-node-1"))  # type: ignore[arg-type]


def _monitor(harness: Harness, tmp_path: Path) -> HealthMonitor:
    monitor = harness.monitor(validations_dir=str(tmp_path / "validations"), startup_grace=120.0)
    monitor.start_over()
    return monitor


def test_nvml_errors_before_the_driver_is_validated_make_no_condition(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path) -> None:
    monitor = _monitor(harness, tmp_path)
    library.inject("driver-unloaded")
    monitor.health_pass()
    library.inject("driver-loaded", "lost on GPU 2", "nvlink-down 0 on GPU 3")
    monitor.health_pass()
    monitor.publisher.sync()
    assert _quiet(server)


def test_nvml_errors_in_the_grace_period_make_no_condition_and_after_it_do(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path) -> None:
    ready = _ready(tmp_path / "validations", age=60.0)
    monitor = _monitor(harness, tmp_path)
    library.inject("lost on GPU 2")
    monitor.health_pass()
    monitor.publisher.sync()
    assert _quiet(server)
    stamp = ready.stat().st_mtime - 61.0
    os.utime(ready, (stamp, stamp))
    monitor.health_pass()
    monitor.publisher.sync()
    assert conditions(server)["GPUFallenOffBus"]["reason"] == "GPULost"


@pytest.mark.parametrize("xid", [13, 31, 43, 45])
def test_application_xids_alone_make_events_and_no_condition(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary, xid: int) -> None:
    monitor = harness.monitor()
    monitor.start_over()
    for _ in range(3):
        library.inject(f"xid {xid} on GPU 0")
        assert monitor.poll_event()
    monitor.publisher.sync()
    monitor.events.flush()
    assert _quiet(server)
    [event] = server.objects("events", "default")
    assert (event["reason"], event["type"], event["count"]) == (f"XID{xid}", "Normal", 3)


def test_a_validation_lost_after_it_passed_is_a_driver_failure_unless_an_upgrade_holds_the_node(
        harness: Harness, server: FakeApiServer, tmp_path: Path) -> None:
    """The validator deletes `driver-ready` when it starts a check and when it stops; gone past the grace period
    after the driver was validated, the validation counts as failed (`ValidatorFailed`)."""
    ready = _ready(tmp_path / "validations", age=500.0)
    now = [ready.stat().st_mtime + 500.0]
    monitor = harness.monitor(validations_dir=str(tmp_path / "validations"), startup_grace=120.0)
    monitor._clock = lambda: now[0]  # the bootstrap start_over makes reads this clock
    monitor.start_over()
    monitor.health_pass()
    ready.unlink()
    monitor.health_pass()
    now[0] += 119.0
    monitor.health_pass()
    monitor.publisher.sync()
    assert _quiet(server)
    _relabel(server, monitor, {"nvidia.com/gpu-driver-upgrade-state": "pod-restart-required"})
    now[0] += 1.0
    monitor.health_pass()
    monitor.publisher.sync()
    assert _quiet(server)
    _relabel(server, monitor, {"nvidia.com/gpu-driver-upgrade-state": "upgrade-done"})
    monitor.health_pass()
    monitor.publisher.sync()
    shown = conditions(server)["GPUDriverFailure"]
    assert (shown["status"], shown["reason"]) == ("True", "ValidatorFailed")
    assert "driver-ready gone for 120 s" in shown["message"]


def test_the_monitor_lets_go_of_nvml_while_the_operands_are_paused(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    """NVIDIA's driver manager and MIG manager pause the GPU operands before they unload the driver or reset the
    GPUs; an NVML client left holding the GPUs would stop both, so the monitor closes NVML meanwhile."""
    monitor = harness.monitor()
    monitor.start_over()
    _relabel(server, monitor, {"nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change"})
    monitor._step_aside_if_paused()
    assert not monitor.poll_event()
    assert library.calls["nvmlShutdown"] == 1
    library.inject("lost on GPU 0")
    monitor.health_pass()
    monitor.publisher.sync()
    assert _quiet(server)
    _relabel(server, monitor, {"nvidia.com/gpu.deploy.device-plugin": "true"})
    monitor._step_aside_if_paused()
    monitor.health_pass()
    monitor.publisher.sync()
    assert conditions(server)["GPUFallenOffBus"]["status"] == "True"


def test_pause_and_upgrade_labels() -> None:
    assert standing_aside({"nvidia.com/gpu.deploy.dcgm": "true_paused-for-driver-upgrade"}) == (
        "nvidia.com/gpu.deploy.dcgm=true_paused-for-driver-upgrade")
    assert standing_aside({"nvidia.com/gpu.deploy.device-plugin": "paused-for-gpu-reset"}) is None
    assert standing_aside({"other": "paused-for-mig-change"}) is None
    assert upgrading({"nvidia.com/gpu-driver-upgrade-state": "drain-required"})
    assert not upgrading({"nvidia.com/gpu-driver-upgrade-state": "upgrade-done"})
    assert not upgrading({})
