"""`gpu-operator-agent health-monitor`: its settings, and a run against a simulated node with a fault file, the way
the e2e tier runs it (a test appends faults to the file named by GPU_OPERATOR_NVML_FAULTS)."""

from __future__ import annotations

import queue
import signal
import threading
from pathlib import Path

import pytest

from gpu_operator.agents.health_monitor import command
from gpu_operator.agents.health_monitor.requests import RESET_REQUEST, RESET_RESULT
from gpu_operator.agents.health_monitor.settings import SettingsError, resolve_settings
from tests.agents.health_monitor.conftest import UUIDS, annotations, conditions, set_annotation, wait_until
from tests.agents.kube.fake_apiserver import FakeApiServer


def test_settings_come_from_flags_then_the_environment() -> None:
    settings = resolve_settings(["--health-interval-seconds", "2"],
                                {"NODE_NAME": "n1", "STARTUP_GRACE_SECONDS": "0", "HEALTH_INTERVAL_SECONDS": "9"},
                                "prog")
    assert (settings.node, settings.health_interval, settings.startup_grace) == ("n1", 2.0, 0.0)
    assert not settings.simulated and resolve_settings([], {"NODE_NAME": "n", "GPU_OPERATOR_NVML": "fake:t4-1x"},
                                                       "prog").simulated


@pytest.mark.parametrize(("argv", "environ", "problem"), [
    ([], {}, "the node is unknown: set NODE_NAME"),
    (["--node-name", "n", "--condition-burst", "0"], {}, "invalid value '0' for --condition-burst: must be 1"),
    (["--node-name", "n", "--nvml", "gpu"], {}, "invalid value 'gpu' for --nvml"),
    (["--serve-host-actions"], {}, "--serve-host-actions needs --host-actions-socket"),
])
def test_bad_settings_are_refused_with_their_fix(argv: list[str], environ: dict[str, str], problem: str) -> None:
    with pytest.raises(SettingsError, match=problem):
        resolve_settings(argv, environ, "prog")


def test_main_exits_2_on_a_bad_setting(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main([], {}) == 2
    assert "health-monitor: the node is unknown" in capsys.readouterr().err


def test_a_simulated_node_with_a_fault_file(tmp_path: Path) -> None:
    """The e2e way: the agent runs on `fake:h100-8x`, a test appends `xid 79 on GPU 3` to the fault file; then a
    reset request is answered through the simulated host. SIGTERM ends the run with 0."""
    signals: queue.SimpleQueue[int] = queue.SimpleQueue()

    class Signals:
        def wait(self, timeout: float | None) -> int | None:
            try:
                return signals.get(timeout=timeout)
            except queue.Empty:
                return None

    faults = tmp_path / "faults"
    environ = {"NODE_NAME": "gpu-node-1", "GPU_OPERATOR_NVML": "fake:h100-8x", "GPU_OPERATOR_NVML_FAULTS": str(faults),
               "VALIDATIONS_DIR": "", "STARTUP_GRACE_SECONDS": "0", "HEALTH_INTERVAL_SECONDS": "0.1"}
    with FakeApiServer() as server:
        server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1"},
                    "status": {"nodeInfo": {"bootID": "b1"}}})
        result: list[int] = []
        runner = threading.Thread(target=lambda: result.append(
            command.main([], environ, kube=server.client(), signals=Signals())))
        runner.start()
        try:
            wait_until(lambda: "GPUFallenOffBus" in conditions(server), "the monitor's start")
            with faults.open("a") as stream:
                stream.write("xid 79 on GPU 3\n")
            wait_until(lambda: conditions(server)["GPUFallenOffBus"]["status"] == "True", "XID 79")
            set_annotation(server, RESET_REQUEST, f"r1:{UUIDS[3]}")
            wait_until(lambda: annotations(server).get(RESET_RESULT) == "r1:success", "the reset")
            wait_until(lambda: conditions(server)["GPUFallenOffBus"]["status"] == "False", "the reset's clearing")
            assert "reset on GPU 3" in faults.read_text()
        finally:
            signals.put(signal.SIGTERM)
            runner.join(timeout=20)
        assert result == [0]
