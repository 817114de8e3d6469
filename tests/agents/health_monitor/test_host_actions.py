"""The privileged helper resets and reboots with the MIG manager's host code, and nothing else.

The commands are those NVIDIA's MIG manager runs (mig-parted v0.15.0 pkg/mig/reconfigure `nvidia-smi -r -i <bus
ids>` for GPUs whose mode stays pending, and `chroot /host reboot` with WITH_REBOOT), in the driver root the
validator's `driver-ready` records (gpu-operator cmd/nvidia-validator: `NVIDIA_DRIVER_ROOT`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpu_operator.agents.health_monitor.host_actions import SocketHost, call_socket
from gpu_operator.agents.health_monitor.host_server import HostActionServer, handle_request, host_actions
from gpu_operator.agents.mig_manager.host import HostActions


class Recorder:
    def __init__(self, status: int = 0, output: str = "") -> None:
        self.commands: list[list[str]] = []
        self.status, self.output = status, output

    def __call__(self, command: Sequence[str]) -> tuple[int, str]:
        self.commands.append(list(command))
        return self.status, self.output


def test_a_reset_runs_nvidia_smi_in_the_driver_root_and_a_reboot_reboots_the_host() -> None:
    runner = Recorder()
    host = HostActions("/run/nvidia/driver", runner=runner)
    assert handle_request({"action": "reset", "busIds": ["00000000:17:00.0", "0000:2a:00.0"]}, host) == {"ok": True}
    assert handle_request({"action": "reboot"}, host) == {"ok": True}
    assert runner.commands == [
        ["chroot", "/host/run/nvidia/driver", "nvidia-smi", "-r", "-i", "00000000:17:00.0,0000:2a:00.0"],
        ["chroot", "/host", "reboot"],
    ]


def test_failures_come_back_with_their_reason() -> None:
    host = HostActions("/", runner=Recorder(1, "GPU 00000000:17:00.0 is in use"))
    assert handle_request({"action": "reset", "busIds": ["00000000:17:00.0"]}, host) == {
        "ok": False, "reason": "nvidia-smi -r failed (1): GPU 00000000:17:00.0 is in use"}
    assert handle_request({"action": "reboot"}, host) == {"ok": False, "reason": "reboot failed (1): "
                                                                                  "GPU 00000000:17:00.0 is in use"}


@pytest.mark.parametrize("request_", [
    {"action": "reset", "busIds": ["00000000:17:00.0; reboot"]},
    {"action": "reset", "busIds": []},
    {"action": "reset"},
    {"action": "format"},
    ["reset"],
])
def test_nothing_but_pci_addresses_reaches_a_command(request_: object) -> None:
    runner = Recorder()
    answer = handle_request(request_, HostActions("/", runner=runner))
    assert answer["ok"] is False and answer["reason"]
    assert runner.commands == []


def test_the_driver_root_comes_from_driver_ready(tmp_path: Path) -> None:
    (tmp_path / "driver-ready").write_text("IS_HOST_DRIVER=false\nNVIDIA_DRIVER_ROOT=/run/nvidia/driver\n")
    assert host_actions(str(tmp_path)).driver_root == "/run/nvidia/driver"
    assert host_actions(str(tmp_path / "none")).driver_root == "/"


def test_the_monitor_talks_to_the_helper_over_its_socket(tmp_path: Path) -> None:
    runner = Recorder()
    socket_path = str(tmp_path / "host-actions.sock")
    server = HostActionServer(socket_path, lambda: HostActions("/", runner=runner))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host = SocketHost(socket_path)
        assert host.reset(["00000000:17:00.0"], [0]) is None
        runner.status, runner.output = 3, "busy"
        assert host.reset(["00000000:17:00.0"], [0]) == "nvidia-smi -r failed (3): busy"
        assert call_socket(socket_path, {"action": "nap"}) == {"ok": False, "reason": "unknown action 'nap': "
                                                                                       "reset or reboot"}
    finally:
        server.shutdown()
        server.server_close()
    assert SocketHost(socket_path).reboot().startswith(f"the host-actions helper at {socket_path} did not answer")
