"""The node-local half of remediation: resets and reboots asked for through annotations, each acted on once.

A reset runs as NVIDIA's MIG manager resets GPUs (mig-parted v0.15.0 pkg/mig/reconfigure: `nvidia-smi -r -i
<bus ids>`, here through gpu_operator/agents/mig_manager/host.py `HostActions.reset_gpus`), a reboot as it
reboots with WITH_REBOOT (`chroot /host reboot`); on a simulated node both are simulated, the reboot writing a new
`status.nodeInfo.bootID` as a rebooted node's kubelet does.
"""

from __future__ import annotations

from typing import Any

from gpu_operator.agents.health_monitor import BOOT_ANNOTATION
from gpu_operator.agents.health_monitor.requests import (
    REBOOT_REQUEST,
    REBOOT_RESULT,
    RESET_REQUEST,
    RESET_RESULT,
    RESET_STARTED,
)
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
from tests.agents.health_monitor.conftest import (
    BOOT,
    UUIDS,
    Harness,
    Running,
    annotations,
    conditions,
    set_annotation,
    wait_until,
)
from tests.agents.kube.fake_apiserver import FakeApiServer


def _result(server: FakeApiServer, key: str = RESET_RESULT) -> str:
    return annotations(server).get(key, "")


def _answer(server: FakeApiServer, request: str) -> str:
    return wait_until(lambda: (r := _result(server)).startswith(f"{request}:") and r, f"the answer to {request}")


def test_a_reset_clears_the_xids_of_the_gpus_it_reset_and_only_theirs(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    with Running(harness.monitor()):
        library.inject("xid 48 on GPU 1", "xid 48 on GPU 2", "dbe on GPU 1")
        wait_until(lambda: conditions(server)["GPUResetRequired"]["message"].count("GPU-") == 3, "three faults")
        set_annotation(server, RESET_REQUEST, f"r-1:{UUIDS[1]}")
        assert wait_until(lambda: _result(server), "the reset result") == "r-1:success"
        shown = wait_until(lambda: (c := conditions(server)["GPUResetRequired"])["message"].count("GPU-") == 1
                           and c, "GPU 1's faults cleared")
        assert shown["status"] == "True" and shown["message"].startswith(UUIDS[2])
        assert annotations(server)[RESET_STARTED] == "r-1"
        assert library.injected(1).dbe == 0


def test_a_reset_request_is_acted_on_once_across_a_restart(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    set_annotation(server, RESET_REQUEST, f"r-2:{UUIDS[0]}")
    with Running(harness.monitor()):
        wait_until(lambda: _result(server) == "r-2:success", "the first monitor's answer")
    resets = library.calls["nvmlShutdown"]
    library.inject("xid 48 on GPU 0")
    with Running(harness.monitor()):
        wait_until(lambda: conditions(server)["GPUResetRequired"]["status"] == "True", "the new XID")
        assert _result(server) == "r-2:success"
    assert library.injected(0).dbe == 0
    assert library.calls["nvmlShutdown"] - resets == 1  # the second monitor's stop only; no release for a reset
    assert conditions(server)["GPUResetRequired"]["reason"] == "XID48"


def test_a_reset_interrupted_by_a_restart_is_answered_failed_not_repeated(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    set_annotation(server, RESET_REQUEST, f"r-3:{UUIDS[0]}")
    set_annotation(server, RESET_STARTED, "r-3")
    with Running(harness.monitor()):
        result = wait_until(lambda: _result(server), "the answer")
    assert result.startswith("r-3:failed:interrupted")
    assert library.calls["nvmlShutdown"] == 1  # the monitor's stop; no reset released NVML


def test_a_failed_reset_and_a_busy_gpu_are_answered_with_why(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    library.inject("reset-fails on GPU 5", "process 4242 on GPU 6")
    with Running(harness.monitor(reset_idle_timeout=0.0)):
        set_annotation(server, RESET_REQUEST, f"r-4:{UUIDS[5]}")
        assert _answer(server, "r-4") == "r-4:failed:GPU reset failed for GPU 5"
        set_annotation(server, RESET_REQUEST, f"r-5:{UUIDS[6]}")
        assert _answer(server, "r-5") == f"r-5:failed:GPUs still in use after 0 s: {UUIDS[6]} by pids 4242"
        set_annotation(server, RESET_REQUEST, "r-6:GPU-00000000-0000-0000-0000-000000000000")
        assert _answer(server, "r-6") == (
            "r-6:failed:no GPU GPU-00000000-0000-0000-0000-000000000000 on node gpu-node-1")
        set_annotation(server, RESET_REQUEST, "r-7:not-a-gpu")
        assert _answer(server, "r-7").startswith(
            "r-7:failed:nvidia.com/gpu-remediation.reset-request: 'not-a-gpu' is not a GPU or MIG UUID")


def test_a_gpu_still_faulty_after_its_reset_fails_the_reset(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    """A GPU that answers "lost" after the reset was not repaired by it."""
    with Running(harness.monitor()) as monitor:
        original = library.reset_gpus

        def reset_then_lose(indices: list[int]) -> str | None:
            done = original(indices)
            library.inject("lost on GPU 7")
            return done

        library.reset_gpus = reset_then_lose  # type: ignore[method-assign]
        set_annotation(server, RESET_REQUEST, f"r-8:{UUIDS[7]}")
        result = wait_until(lambda: _result(server), "the answer")
        assert result.startswith(f"r-8:failed:still faulty after the reset: {UUIDS[7]} (")
        assert "GPULost" in result
        assert monitor is not None


def test_a_reboot_request_reboots_once_and_the_new_boot_clears_the_old_faults(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    with Running(harness.monitor()):
        library.inject("xid 79 on GPU 3", "lost on GPU 3")
        wait_until(lambda: conditions(server)["GPUFallenOffBus"]["status"] == "True", "XID 79")
        set_annotation(server, REBOOT_REQUEST, "boot-r1")
        wait_until(lambda: conditions(server)["GPUFallenOffBus"]["status"] == "False", "the reboot's clearing")
        node = server.get("nodes", "gpu-node-1")
        assert node is not None
        boot = node["status"]["nodeInfo"]["bootID"]
        assert boot != BOOT
        assert _result(server, REBOOT_RESULT) == "boot-r1:rebooting"
        wait_until(lambda: annotations(server).get(BOOT_ANNOTATION) == boot, "the new boot recorded")
        assert not library.injected(3).lost
    with Running(harness.monitor()):
        wait_until(lambda: annotations(server).get(BOOT_ANNOTATION) == boot, "the second monitor's start")
    node = server.get("nodes", "gpu-node-1")
    assert node is not None and node["status"]["nodeInfo"]["bootID"] == boot  # not rebooted twice


def test_without_its_helper_a_node_answers_that_it_does_not_reset(
        server: FakeApiServer, library: SimulatedLibrary) -> None:
    harness = Harness(server, library)
    monitor = harness.monitor()
    monitor._host = lambda nvml: None  # type: ignore[method-assign]
    monitor.requests._host = lambda: None  # type: ignore[attr-defined]
    monitor.start_over()
    set_annotation(server, RESET_REQUEST, f"r-9:{UUIDS[0]}")
    set_annotation(server, REBOOT_REQUEST, "boot-r2")
    monitor.view.offer(server.get("nodes", "gpu-node-1"))  # type: ignore[arg-type]
    monitor.requests.handle()
    assert _result(server).startswith("r-9:failed:this node's health monitor runs without its host-actions helper")
    assert _result(server, REBOOT_RESULT).startswith("boot-r2:failed:")


def test_while_a_real_host_goes_down_nothing_is_read(harness: Harness, server: FakeApiServer,
                                                     library: SimulatedLibrary) -> None:
    """A real reboot does not return to the monitor: until the process ends with the host, a driver unloading
    or GPUs vanishing is no fault."""
    class RealHost:
        returns_from_reboot = False

        def reset(self, bus_ids: object, indices: object) -> None:
            return None

        def reboot(self) -> None:
            return None

    monitor = harness.monitor()
    monitor.requests._host = lambda: RealHost()  # type: ignore[attr-defined]
    monitor.start_over()
    set_annotation(server, REBOOT_REQUEST, "boot-r3")
    monitor.view.offer(server.get("nodes", "gpu-node-1"))  # type: ignore[arg-type]
    monitor.requests.handle()
    assert _result(server, REBOOT_RESULT) == "boot-r3:rebooting"
    library.inject("driver-unloaded")
    monitor.run(until=_after(3))
    monitor.publisher.sync()
    assert conditions(server)["GPUDriverFailure"]["status"] == "False"


def _after(steps: int) -> Any:
    """An `until` for `run` that is set after a few loop checks."""
    class Countdown:
        left = steps

        def is_set(self) -> bool:
            self.left -= 1
            return self.left < 0

    return Countdown()
