"""Allocate answers that the end-to-end tests do not reach: host paths seen through a container mount, MIG caps."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.device_plugin.allocate import AllocationError, allocate, mig_minors
from gpu_operator.agents.device_plugin.devices import Resource, build_resources
from gpu_operator.agents.device_plugin.settings import MigStrategy, Settings
from gpu_operator.agents.nvml import open_nvml


def _resource(profile: str, strategy: MigStrategy = MigStrategy.NONE) -> Resource:
    nvml = open_nvml(f"fake:{profile}")
    try:
        return build_resources(nvml.devices(), Settings(mig_strategy=strategy))[0]
    finally:
        nvml.close()


def test_device_nodes_are_checked_in_the_container_and_passed_as_host_paths(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "nvidiactl").touch()
    settings = Settings(pass_device_specs=True, driver_root="/run/nvidia/driver", dev_root_ctr_path=str(tmp_path))
    resource = _resource("t4-1x")
    answer = allocate(resource, [resource.devices[0].id], settings)
    assert [(d.container_path, d.host_path) for d in answer.devices] == [
        ("/dev/nvidiactl", "/run/nvidia/driver/dev/nvidiactl"), ("/dev/nvidia0", "/run/nvidia/driver/dev/nvidia0")]


def test_a_mig_device_without_its_capability_minor_is_refused_by_name(tmp_path: Path) -> None:
    resource = _resource("a100-8x-mig", MigStrategy.SINGLE)
    settings = Settings(mig_strategy=MigStrategy.SINGLE, pass_device_specs=True, proc_root=str(tmp_path))
    with pytest.raises(AllocationError, match=r"no capability device for MIG device 0:0 \(gpu0/gi7/access"):
        allocate(resource, [resource.devices[0].id], settings)


def test_mig_minors_reads_the_drivers_table(tmp_path: Path) -> None:
    caps = tmp_path / "driver" / "nvidia-caps"
    caps.mkdir(parents=True)
    (caps / "mig-minors").write_text("config 1\nmonitor 2\ngpu0/gi7/access 66\ngpu0/gi7/ci0/access 67\n")
    assert mig_minors(str(tmp_path)) == {"config": 1, "monitor": 2, "gpu0/gi7/access": 66, "gpu0/gi7/ci0/access": 67}
    assert mig_minors(str(tmp_path / "none")) == {}
