"""A MIG mode that stays pending: reset, then reboot with WITH_REBOOT, then success or failure after the reboot."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvml
import pytest

from gpu_operator.agents.mig_manager.config import load_config
from gpu_operator.agents.mig_manager.hardware import MigHardware
from gpu_operator.agents.mig_manager.host import HostActions
from gpu_operator.agents.mig_manager.reconfigure import PAUSED, REASON_ANNOTATION, STATE_LABEL, Reconfigurer, Settings
from gpu_operator.agents.nvml.simulated import SimulatedLibrary, load_profile
from gpu_operator.mig import default_config, to_yaml
from tests.agents.kube.fake_apiserver import FakeApiServer

NODE = "gpu-node-0"
DEVICE_PLUGIN = "nvidia.com/gpu.deploy.device-plugin"


class PendingModeLibrary(SimulatedLibrary):
    """A GPU whose new MIG mode waits for a reset (as on A100): the mode is recorded and applied by `reset()`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked: dict[int, int] = {}

    def nvmlDeviceSetMigMode(self, handle: Any, mode: int) -> int:
        self.asked[handle.index] = mode
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        current, _ = super().nvmlDeviceGetMigMode(handle)
        return [current, self.asked.get(handle.index, current)]

    def reset(self) -> None:
        for index, mode in self.asked.items():
            super().nvmlDeviceSetMigMode(self.nvmlDeviceGetHandleByIndex(index), mode)
        self.asked.clear()


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        running.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {DEVICE_PLUGIN: "true"}}})
        yield running


@pytest.fixture
def library() -> PendingModeLibrary:
    lib = PendingModeLibrary(load_profile("a100-4x-mixed-mig"), sleep=lambda _: None)
    lib.nvmlInitWithFlags(0)
    return lib


def _manager(server: FakeApiServer, library: PendingModeLibrary, tmp_path: Path, commands: list[list[str]],
             *, resets: bool, with_reboot: bool, reboot_answer: tuple[int, str] = (0, "")) -> Reconfigurer:
    config = tmp_path / "config.yaml"
    config.write_text(to_yaml(default_config()))

    def runner(command: Any) -> tuple[int, str]:
        commands.append(list(command))
        if resets and "nvidia-smi" in command:
            library.reset()
        return reboot_answer if "reboot" in command else (0, "")

    host = HostActions("/run/nvidia/driver", runner=runner)
    return Reconfigurer(
        server.client(),
        MigHardware(library),
        load_config(config),
        Settings(NODE, "gpu-operator", poll_interval=0.01, with_reboot=with_reboot),
        reset=host.reset_gpus,
        reboot=host.reboot,
    )


def _labels(server: FakeApiServer) -> dict[str, str]:
    return server.get("nodes", NODE)["metadata"]["labels"]


def test_reset_makes_the_mode_take_effect(server: FakeApiServer, library: PendingModeLibrary, tmp_path: Path) -> None:
    commands: list[list[str]] = []
    manager = _manager(server, library, tmp_path, commands, resets=True, with_reboot=False)
    assert manager.reconfigure("all-1g.10gb") == "success"
    assert commands == [["chroot", "/host/run/nvidia/driver", "nvidia-smi", "-r", "-i",
                         "00000000:07:00.0,00000000:0F:00.0,00000000:47:00.0,00000000:4E:00.0"]]
    assert MigHardware(library).gpus()[3].devices == {"1g.10gb": 7}


def test_without_reboot_a_pending_mode_fails_and_rolls_back(
    server: FakeApiServer, library: PendingModeLibrary, tmp_path: Path
) -> None:
    commands: list[list[str]] = []
    before = MigHardware(library).gpus()
    assert _manager(server, library, tmp_path, commands, resets=False, with_reboot=False).reconfigure(
        "all-1g.10gb"
    ) == "failed"
    node = server.get("nodes", NODE)
    assert "MIG mode change pending on GPU 2, 3" in node["metadata"]["annotations"][REASON_ANNOTATION]
    assert _labels(server)[DEVICE_PLUGIN] == "true"
    assert [(g.enabled, g.devices) for g in MigHardware(library).gpus()] == [(g.enabled, g.devices) for g in before]


def test_reboot_then_finish_or_fail(server: FakeApiServer, library: PendingModeLibrary, tmp_path: Path) -> None:
    commands: list[list[str]] = []
    manager = _manager(server, library, tmp_path, commands, resets=False, with_reboot=True)
    assert manager.reconfigure("all-1g.10gb") == "rebooting"
    assert commands[-1] == ["chroot", "/host", "reboot"]
    assert _labels(server)[STATE_LABEL] == "rebooting"
    assert _labels(server)[DEVICE_PLUGIN] == PAUSED  # the operands stay paused across the reboot
    # the host did not come back with the mode applied: failed, and the operands come back
    assert manager.reconfigure("all-1g.10gb") == "failed"
    assert _labels(server)[DEVICE_PLUGIN] == "true"
    assert "still pending after the reboot" in server.get("nodes", NODE)["metadata"]["annotations"][REASON_ANNOTATION]
    # a reboot that applied the mode: the next run creates the instances and succeeds
    assert manager.reconfigure("all-1g.10gb") == "rebooting"
    library.reset()
    assert manager.reconfigure("all-1g.10gb") == "success"
    assert _labels(server)[DEVICE_PLUGIN] == "true"
    assert all(g.devices == {"1g.10gb": 7} for g in MigHardware(library).gpus())


def test_a_failed_reboot_is_failed_with_labels_back(
    server: FakeApiServer, library: PendingModeLibrary, tmp_path: Path
) -> None:
    manager = _manager(
        server, library, tmp_path, [], resets=False, with_reboot=True, reboot_answer=(1, "reboot: not permitted")
    )
    assert manager.reconfigure("all-1g.10gb") == "failed"
    reason = server.get("nodes", NODE)["metadata"]["annotations"][REASON_ANNOTATION]
    assert "reboot failed (1): reboot: not permitted" in reason and "previous layout restored" in reason
    assert _labels(server)[DEVICE_PLUGIN] == "true" and _labels(server)[STATE_LABEL] == "failed"
