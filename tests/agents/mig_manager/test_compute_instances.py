"""MIG devices whose compute instance is smaller than their GPU instance (`1c.2g.20gb`): the config model, the
apply path on a simulated A100, what the manager and the NVML inventory read back, and what is refused."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from gpu_operator.agents.mig_manager.config import MigConfigError, load_config, parse_config
from gpu_operator.agents.mig_manager.hardware import MigHardware
from gpu_operator.agents.mig_manager.reconfigure import REASON_ANNOTATION, STATE_LABEL, Reconfigurer, Settings
from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
from gpu_operator.agents.nvml.simulated.pci import SimulatedPciBus
from tests.agents.kube.fake_apiserver import FakeApiServer

NODE = "gpu-node-0"
CONFIG = """version: v1
mig-configs:
  all-1g.10gb:
    - {devices: all, mig-enabled: true, mig-devices: {1g.10gb: 7}}
  compute-slices:
    - {devices: all, mig-enabled: true, mig-devices: {1c.2g.20gb: 2, 2c.3g.40gb: 1}}
  does-not-fit:
    - {devices: all, mig-enabled: true, mig-devices: {2c.4g.40gb: 1, 1c.3g.40gb: 2}}
"""


def _manager(server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path) -> Reconfigurer:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    return Reconfigurer(server.client(), MigHardware(library), load_config(path), Settings(NODE, "gpu-operator"))


def test_compute_instances_smaller_than_their_gpu_instance_are_created_and_read_back(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    manager = _manager(server, library, tmp_path)
    assert manager.reconfigure("compute-slices") == "success"
    hardware = MigHardware(library)
    assert [g.devices for g in hardware.gpus()] == [{"1c.2g.20gb": 2, "2c.3g.40gb": 1}] * 8
    placements = library.profile.gpus[0].mig.devices  # type: ignore[union-attr]
    assert Counter((p.profile, p.compute_slices) for p in placements) == Counter(
        {("2g.20gb", 1): 2, ("3g.40gb", 2): 1})
    # the agents' NVML inventory (device plugin, feature discovery, exporter) names them as go-nvlib does
    nvml = LibraryNvml.open(library, SimulatedPciBus(library.profile))
    assert sorted(m.profile for m in nvml.devices()[0].mig_devices) == ["1c.2g.20gb", "1c.2g.20gb", "2c.3g.40gb"]
    # applying the same config again is success at once; switching back destroys the smaller compute instances too
    assert manager.reconfigure("compute-slices") == "success"
    assert manager.reconfigure("all-1g.10gb") == "success"
    assert [g.devices for g in hardware.gpus()] == [{"1g.10gb": 7}] * 8


def test_compute_slice_layouts_that_do_not_fit_fail_and_roll_back(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    manager = _manager(server, library, tmp_path)
    before = [g.devices for g in MigHardware(library).gpus()]
    assert manager.reconfigure("does-not-fit") == "failed"
    assert [g.devices for g in MigHardware(library).gpus()] == before
    node = server.get("nodes", NODE)
    assert node is not None and node["metadata"]["labels"][STATE_LABEL] == "failed"
    reason = node["metadata"]["annotations"][REASON_ANNOTATION]
    assert reason.startswith("applying 'does-not-fit' failed, previous layout restored: GPU 0: cannot create a "
                             "3g.40gb instance"), reason


@pytest.mark.parametrize(
    ("devices", "message"),
    [
        ("{3c.2g.20gb: 1}", "a compute instance of 3 slices does not fit a 2-slice GPU instance"),
        ("{1c.2g: 1}", "is not a MIG profile such as '1g.10gb', '1c.2g.20gb'"),
    ],
)
def test_impossible_compute_profiles_are_config_errors(devices: str, message: str) -> None:
    text = f"version: v1\nmig-configs:\n  x:\n    - {{devices: all, mig-enabled: true, mig-devices: {devices}}}\n"
    with pytest.raises(MigConfigError) as refused:
        parse_config(text, "config.yaml")
    assert message in str(refused.value)


def test_a_full_size_compute_prefix_is_the_gpu_instance_name() -> None:
    text = ("version: v1\nmig-configs:\n  x:\n    - {devices: all, mig-enabled: true, "
            "mig-devices: {2c.2g.20gb: 1, 2g.20gb: 1, 1c.2g.20gb: 1}}\n")
    layout = parse_config(text, "config.yaml").mig_configs["x"][0]
    assert layout.mig_devices == {"2g.20gb": 2, "1c.2g.20gb": 1}
