"""The probes behind the node status gauges, each against files, fake commands or fake API answers."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from gpu_operator.agents.exposition import HEALTHY, Snapshot, SnapshotHolder
from gpu_operator.agents.node_status_exporter import NodeState, ProbeRunner
from gpu_operator.agents.node_status_exporter import gauges as g
from gpu_operator.agents.node_status_exporter.driver_check import NvidiaSmiCheck
from gpu_operator.agents.node_status_exporter.driver_check import _in_root as in_root
from gpu_operator.agents.node_status_exporter.node_capacity import (
    NodeView,
    NodeApiError,
    count_gpu_resources,
    quantity_value,
)
from gpu_operator.agents.node_status_exporter.pci_count import (
    FAILED,
    LspciCounter,
    SysfsCounter,
    count_nvidia_lines,
    default_counter,
)
from gpu_operator.agents.node_status_exporter.probes import (
    Probe,
    device_plugin_probe,
    driver_probe,
    pci_probe,
    status_files_probe,
)
from gpu_operator.agents.node_status_exporter.simulated_node import (
    SimulatedDriverCheck,
    SimulatedPciCounter,
)
from gpu_operator.agents.node_status_exporter.status_files import read_status_files

NOW = 1795254312.7


def test_status_files_open_their_barriers(tmp_path: Path) -> None:
    (tmp_path / "driver-ready").write_text("IS_HOST_DRIVER=false\n")
    (tmp_path / "cuda-ready").touch()
    assert read_status_files(str(tmp_path)) == {
        g.DRIVER_READY: 1.0, g.TOOLKIT_READY: 0.0, g.PLUGIN_READY: 0.0, g.CUDA_READY: 1.0}
    (tmp_path / "driver-ready").unlink()
    assert status_files_probe(str(tmp_path), 30).run()[g.DRIVER_READY] == 0.0
    assert set(read_status_files(str(tmp_path / "absent")).values()) == {0.0}


class Recorder:
    def __init__(self, status: int = 0) -> None:
        self.commands: list[list[str]] = []
        self.status = status

    def __call__(self, command: Sequence[str]) -> int:
        self.commands.append(list(command))
        return self.status


def executable(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_host_driver_runs_inside_the_host_root(tmp_path: Path) -> None:
    executable(tmp_path / "host/usr/sbin/nvidia-smi")
    run = Recorder()
    check = NvidiaSmiCheck(str(tmp_path / "host"), str(tmp_path / "driver"), run=run)
    assert check()
    assert run.commands == [["chroot", str(tmp_path / "host"), "/usr/sbin/nvidia-smi"]]


def test_container_driver_and_skip_gpu_init(tmp_path: Path) -> None:
    executable(tmp_path / "driver/usr/bin/nvidia-smi")
    run = Recorder()
    check = NvidiaSmiCheck(str(tmp_path / "host"), str(tmp_path / "driver"), skip_gpu_init=True, run=run)
    assert check()
    assert run.commands == [["chroot", str(tmp_path / "driver"), "nvidia-smi", "--version"]]


def test_failing_nvidia_smi_and_no_driver(tmp_path: Path) -> None:
    executable(tmp_path / "host/usr/bin/nvidia-smi")
    executable(tmp_path / "driver/usr/bin/nvidia-smi")
    run = Recorder(status=9)
    assert not NvidiaSmiCheck(str(tmp_path / "host"), str(tmp_path / "driver"), run=run)()
    assert [c[1] for c in run.commands] == [str(tmp_path / "host"), str(tmp_path / "driver")]
    assert not NvidiaSmiCheck(str(tmp_path / "none"), str(tmp_path / "none"), run=Recorder())()


def test_wsl_hosts_pass_and_a_slash_host_root_runs_directly(tmp_path: Path) -> None:
    (tmp_path / "host/usr/lib/wsl/lib").mkdir(parents=True)
    (tmp_path / "host/usr/lib/wsl/lib/nvidia-smi").write_text("binary")
    run = Recorder(status=1)
    assert NvidiaSmiCheck(str(tmp_path / "host"), run=run)() and run.commands == []
    assert in_root("/", "/usr/bin/nvidia-smi", ("--version",)) == ["/usr/bin/nvidia-smi", "--version"]
    assert in_root("/host/", "/usr/bin/nvidia-smi", ()) == ["chroot", "/host/", "/usr/bin/nvidia-smi"]


def test_driver_probe_records_the_last_success() -> None:
    assert driver_probe(lambda: True, lambda: NOW, 60).run() == {
        g.DRIVER_VALIDATION: 1.0, g.DRIVER_VALIDATION_LAST_SUCCESS: 1795254312.0}
    assert driver_probe(lambda: False, lambda: NOW, 60).run() == {g.DRIVER_VALIDATION: 0.0}


@pytest.mark.parametrize(
    ("text", "value"), [("8", 8), ("0", 0), ("1k", 1000), ("2Ki", 2048), ("500m", 1), ("1.5", 2), ("1e3", 1000)]
)
def test_quantities_round_up(text: str, value: int) -> None:
    assert quantity_value(text) == value


def test_quantity_errors() -> None:
    with pytest.raises(NodeApiError, match="not a quantity"):
        quantity_value("eight")


class Capacity:
    def __init__(self, answer: Mapping[str, str] | None, labels: Mapping[str, str] | None = None) -> None:
        self._answer = answer
        self._labels = labels or {}

    def read(self) -> NodeView:
        if self._answer is None:
            raise NodeApiError("forbidden")
        return NodeView(self._answer, self._labels)


def _devices(changes: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in changes.items() if k in (g.DEVICE_PLUGIN_DEVICES, g.DEVICE_PLUGIN_LAST_SUCCESS)}


def test_device_plugin_devices() -> None:
    capacity = {"cpu": "96", "nvidia.com/gpu": "4", "nvidia.com/gpu.shared": "16", "nvidia.com/mig-1g.10gb": "7",
                "example.com/gpu": "3"}
    assert count_gpu_resources(capacity) == 27
    assert _devices(device_plugin_probe(Capacity(capacity), lambda: NOW, 30).run()) == {
        g.DEVICE_PLUGIN_DEVICES: 27.0, g.DEVICE_PLUGIN_LAST_SUCCESS: 1795254312.0}
    assert _devices(device_plugin_probe(Capacity({"cpu": "8"}), lambda: NOW, 30).run()) == {
        g.DEVICE_PLUGIN_DEVICES: 0.0}
    assert device_plugin_probe(Capacity(None), lambda: NOW, 30).run() == {g.DEVICE_PLUGIN_DEVICES: -1.0}


@pytest.mark.parametrize(("labels", "capacity", "expected"), [
    ({}, {"nvidia.com/gpu": "8"}, {g.DEVICE_PLUGIN_ENABLED: 1.0, g.INFINIBAND_PRESENT: 0.0, g.RDMA_DEVICES: 0.0,
                                   g.DRIVER_UPGRADE_STATE: "", g.MIG_CONFIG_STATE: ""}),
    ({"nvidia.com/gpu.deploy.device-plugin": "false"}, {}, {g.DEVICE_PLUGIN_ENABLED: 0.0}),  # a DRA pool
    ({"nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change"}, {}, {g.DEVICE_PLUGIN_ENABLED: 1.0}),
    ({"feature.node.kubernetes.io/pci-15b3.present": "true"}, {"rdma/ib": "8", "rdma/shared_ib": "63"},
     {g.INFINIBAND_PRESENT: 1.0, g.RDMA_DEVICES: 71.0}),
    ({"feature.node.kubernetes.io/pci-15b3.present": "true"}, {"nvidia.com/gpu": "8"},
     {g.INFINIBAND_PRESENT: 1.0, g.RDMA_DEVICES: 0.0}),  # MOFED never came up: no RDMA resource at all
    ({"nvidia.com/gpu-driver-upgrade-state": "upgrade-required", "nvidia.com/mig.config.state": "failed"}, {},
     {g.DRIVER_UPGRADE_STATE: "upgrade-required", g.MIG_CONFIG_STATE: "failed"}),
])
def test_gauges_from_the_nodes_labels(
    labels: dict[str, str], capacity: dict[str, str], expected: dict[str, object]
) -> None:
    changes = device_plugin_probe(Capacity(capacity, labels), lambda: NOW, 30).run()
    assert {k: changes[k] for k in expected} == expected


def test_state_gauges_publish_one_series_for_the_current_value() -> None:
    holder = SnapshotHolder(Snapshot(b"", HEALTHY))
    state = NodeState("gpu-1", holder, NOW)
    body = holder.current().body.decode()
    assert "gpu_operator_node_device_plugin_enabled{node=\"gpu-1\"} 1" in body
    assert "gpu_operator_node_mig_config_state" not in body  # no label, no series
    state.update({g.MIG_CONFIG_STATE: "pending"})
    state.update({g.MIG_CONFIG_STATE: "success"})
    body = holder.current().body.decode()
    assert 'gpu_operator_node_mig_config_state{node="gpu-1",state="success"} 1' in body
    assert 'state="pending"' not in body
    with pytest.raises(KeyError):
        state.update({"gpu_operator_node_bogus": 1.0})


LSPCI = """\
00:00.0 Host bridge: Intel Corporation 440FX - 82441FX PMC [Natoma] (rev 02)
07:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
0f:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
85:00.0 Bridge: Nvidia Corporation Device 22a3 (rev a1)
c1:00.0 Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]
"""


def test_lspci_lines_mentioning_nvidia(tmp_path: Path) -> None:
    assert count_nvidia_lines(LSPCI) == 3
    program = tmp_path / "lspci"
    program.write_text(f"#!/bin/sh\ncat <<'EOF'\n{LSPCI}EOF\n")
    program.chmod(0o755)
    assert LspciCounter(str(program))() == 3
    failing = tmp_path / "failing"
    failing.write_text("#!/bin/sh\nexit 1\n")
    failing.chmod(0o755)
    assert LspciCounter(str(failing))() == FAILED
    assert LspciCounter(str(tmp_path / "missing"))() == FAILED


def test_sysfs_count_without_lspci(tmp_path: Path) -> None:
    for address, vendor in (("0000:07:00.0", "0x10de"), ("0000:07:00.1", "0x10de"), ("0000:c1:00.0", "0x15b3")):
        (tmp_path / "bus/pci/devices" / address).mkdir(parents=True)
        (tmp_path / "bus/pci/devices" / address / "vendor").write_text(f"{vendor}\n")
    assert SysfsCounter(str(tmp_path))() == 2
    assert SysfsCounter(str(tmp_path / "absent"))() == FAILED
    assert isinstance(default_counter(str(tmp_path), which=lambda name: None), SysfsCounter)
    assert isinstance(default_counter(str(tmp_path), which=lambda name: "/usr/bin/lspci"), LspciCounter)
    assert pci_probe(SysfsCounter(str(tmp_path)), 60).run() == {g.NVIDIA_PCI_DEVICES: 2.0}


def test_a_simulated_node_answers_the_driver_and_pci_probes(tmp_path: Path) -> None:
    assert SimulatedDriverCheck("fake:h100-8x")()
    assert SimulatedPciCounter("fake:h100-8x")() == 8
    broken = tmp_path / "broken.yaml"
    broken.write_text("extends: t4-1x\nfaults:\n  init: DRIVER_NOT_LOADED\n")
    assert not SimulatedDriverCheck(f"fake:{broken}")()
    assert SimulatedPciCounter(f"fake:{broken}")() == 1


def test_probe_runner_applies_each_probe_on_its_interval(tmp_path: Path) -> None:
    holder = SnapshotHolder()
    state = NodeState("worker-1", holder, NOW)
    calls = {"fast": 0}

    def fast() -> Mapping[str, float]:
        calls["fast"] += 1
        return {g.NVIDIA_PCI_DEVICES: float(calls["fast"])}

    def broken() -> Mapping[str, float]:
        raise RuntimeError("boom")

    runner = ProbeRunner(state, [Probe("fast", 0.02, fast), Probe("broken", 0.02, broken),
                                 status_files_probe(str(tmp_path), 3600)])
    (tmp_path / "toolkit-ready").touch()
    runner.start()
    deadline = time.monotonic() + 10
    while calls["fast"] < 3:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    runner.stop()
    values = state.values()
    assert values[g.NVIDIA_PCI_DEVICES] >= 3 and values[g.TOOLKIT_READY] == 1.0
    assert os.path.exists(tmp_path / "toolkit-ready")


def test_host_driver_in_opt_bin_is_found(tmp_path: Path) -> None:
    # Flatcar and other read-only /usr hosts install the driver's tools under /opt/bin.
    executable(tmp_path / "host/opt/bin/nvidia-smi")
    run = Recorder()
    check = NvidiaSmiCheck(str(tmp_path / "host"), str(tmp_path / "driver"), run=run)
    assert check()
    assert run.commands == [["chroot", str(tmp_path / "host"), "/opt/bin/nvidia-smi"]]
