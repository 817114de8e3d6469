"""A monitor that starts again: in the same boot it adopts what its conditions show, in a new boot it clears them.

The boot is the Node's `status.nodeInfo.bootID` (the kubelet's, a new one on every reboot); the monitor records
the boot its conditions were written in (`nvidia.com/gpu-remediation.conditions-boot-id`) only after it wrote
them, so a monitor stopped in between clears them again.
"""

from __future__ import annotations

from gpu_operator.agents.health_monitor import BOOT_ANNOTATION
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
from tests.agents.health_monitor.conftest import (
    PCI,
    UUIDS,
    Harness,
    annotations,
    conditions,
    status_writes,
)
from tests.agents.kube.fake_apiserver import FakeApiServer


def _with_faults(harness: Harness, library: SimulatedLibrary) -> None:
    monitor = harness.monitor()
    monitor.start_over()
    library.inject("xid 79 on GPU 3")
    assert monitor.poll_event()
    library.inject("dbe on GPU 1")
    monitor.health_pass()
    assert monitor.publisher.sync()
    monitor.stop()


def test_a_restart_in_the_same_boot_adopts_the_conditions_and_writes_nothing(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    _with_faults(harness, library)
    before, writes = conditions(server), len(status_writes(server))
    monitor = harness.monitor()
    monitor.start_over()
    assert len(status_writes(server)) == writes
    monitor.health_pass()  # the DBE is still there; the XID is held until a reset or a reboot
    monitor.publisher.sync()
    assert len(status_writes(server)) == writes
    assert conditions(server) == before
    assert conditions(server)["GPUFallenOffBus"]["message"] == (
        f'{UUIDS[3]} ({PCI[3]}): XID 79 "GPU has fallen off the bus": RESTART_BM')


def test_a_restart_adopts_the_xid_and_a_reset_of_its_gpu_still_clears_it(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    _with_faults(harness, library)
    monitor = harness.monitor()
    monitor.start_over()
    monitor.reset_done([UUIDS[3]], "r-1")
    monitor.publisher.sync()
    assert conditions(server)["GPUFallenOffBus"]["status"] == "False"
    assert conditions(server)["GPUResetRequired"]["status"] == "True"


def test_a_new_boot_clears_every_fault_of_the_last_one_then_records_the_boot(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    _with_faults(harness, library)
    assert annotations(server)[BOOT_ANNOTATION] == "boot-1"
    server.update("nodes", "gpu-node-1", None, lambda node: node["status"]["nodeInfo"].update(bootID="boot-2"))
    library.reboot()
    monitor = harness.monitor()
    monitor.start_over()
    shown = conditions(server)
    assert shown["GPUFallenOffBus"]["status"] == "False" and shown["GPUResetRequired"]["status"] == "False"
    assert annotations(server)[BOOT_ANNOTATION] == "boot-2"
    patches = [r for r in server.requests if r.method == "PATCH"]
    assert "status" in patches[-2].body and patches[-1].body == {
        "metadata": {"annotations": {BOOT_ANNOTATION: "boot-2"}}}


def test_a_new_boot_clears_the_conditions_again_when_the_boot_was_not_recorded(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    """Stopped between writing the conditions and recording the boot: the next start clears them again, so a
    fault of the old boot is never adopted into the new one."""
    _with_faults(harness, library)
    server.update("nodes", "gpu-node-1", None, lambda node: node["status"]["nodeInfo"].update(bootID="boot-2"))
    server.fail("PATCH", "/api/v1/nodes/gpu-node-1$", 500, times=1)
    monitor = harness.monitor()
    monitor.start_over()
    assert annotations(server)[BOOT_ANNOTATION] == "boot-1"
    library.inject("xid 79 on GPU 3")
    server.update("nodes", "gpu-node-1", None, lambda node: node["status"]["conditions"].append(
        {"type": "GPUFallenOffBus", "status": "True", "reason": "XID79",
         "message": f'{UUIDS[3]} ({PCI[3]}): XID 79 "GPU has fallen off the bus": RESTART_BM'}))
    again = harness.monitor()
    again.start_over()
    assert conditions(server)["GPUFallenOffBus"]["status"] == "False"
    assert annotations(server)[BOOT_ANNOTATION] == "boot-2"
