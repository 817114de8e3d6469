"""Allocate answers that the end-to-end tests do not reach: host paths seen through a container mount, MIG caps."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.device_plugin.allocate import AllocationError, allocate, mig_minors
from gpu_operator.agents.device_plugin.devices import PluginDevice, Resource, build_resources
from gpu_operator.agents.device_plugin.settings import (
    ListStrategy,
    MigStrategy,
    Settings,
    SettingsError,
    resolve_settings,
)
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


def test_mig_capability_device_specs_are_those_of_the_parent_minor_not_the_nvml_index() -> None:
    """Issue 20 item 2: the MIG capability nodes were looked up by NVML index, NVIDIA's by the parent's minor.

    Follows k8s-device-plugin v0.20.0 internal/rm/nvml_devices.go (nvmlMigDevice.GetPaths: `gpu<minor>/gi<G>`
    from the parent's GetMinorNumber) and nvidia-container-toolkit v1.20.2 internal/platform-support/dgpu/nvml.go
    (toRequiredMigInfo.getPlacementInfo).
    """
    mig = PluginDevice("MIG-x", "MIG-x", "0:0", 0, "GPU-x", 3, None, gpu_instance_id=1, compute_instance_id=0)
    table = {"gpu0/gi1/access": 5, "gpu0/gi1/ci0/access": 6, "gpu3/gi1/access": 30, "gpu3/gi1/ci0/access": 31}
    settings = Settings(mig_strategy=MigStrategy.SINGLE, pass_device_specs=True, dev_root="/host")
    answer = allocate(Resource("nvidia.com/gpu", (mig,)), ["MIG-x"], settings, minors=lambda: table)
    assert [d.container_path for d in answer.devices] == [
        "/dev/nvidia3", "/dev/nvidia-caps/nvidia-cap30", "/dev/nvidia-caps/nvidia-cap31"]


@pytest.mark.parametrize("strategies, specs", [
    ((ListStrategy.CDI_CRI,), False),
    ((ListStrategy.CDI_ANNOTATIONS, ListStrategy.CDI_CRI), False),
    ((ListStrategy.ENVVAR, ListStrategy.CDI_CRI), True),
])
def test_device_specs_are_left_to_cdi_when_every_strategy_is_cdi(strategies: tuple[ListStrategy, ...],
                                                                 specs: bool) -> None:
    """Issue 20 item 3: with every strategy CDI, NVIDIA returns before adding DeviceSpecs (passDeviceSpecs or not).

    Follows k8s-device-plugin v0.20.0 internal/plugin/server.go (getAllocateResponse: `AllCDIEnabled()` returns
    the response before updateResponseForDeviceListEnvVar, updateResponseForDeviceMounts and apiDeviceSpecs).
    """
    resource = _resource("t4-1x")
    settings = Settings(pass_device_specs=True, device_list_strategy=strategies)
    answer = allocate(resource, [resource.devices[0].id], settings)
    assert bool(answer.devices) is specs
    assert answer.cdi_devices == [f"k8s.device-plugin.nvidia.com/gpu={resource.devices[0].uuid}"]


def test_mig_minors_reads_the_drivers_table(tmp_path: Path) -> None:
    caps = tmp_path / "driver" / "nvidia-caps"
    caps.mkdir(parents=True)
    (caps / "mig-minors").write_text("config 1\nmonitor 2\ngpu0/gi7/access 66\ngpu0/gi7/ci0/access 67\n")
    assert mig_minors(str(tmp_path)) == {"config": 1, "monitor": 2, "gpu0/gi7/access": 66, "gpu0/gi7/ci0/access": 67}
    assert mig_minors(str(tmp_path / "none")) == {}


def test_imex_channel_zero_reaches_every_strategy() -> None:
    resource = _resource("t4-1x")
    strategies = (ListStrategy.ENVVAR, ListStrategy.CDI_CRI)
    settings = Settings(imex_channel_ids=(0,), device_list_strategy=strategies)
    answer = allocate(resource, [resource.devices[0].id], settings)
    assert answer.envs["NVIDIA_IMEX_CHANNELS"] == "0"
    assert answer.cdi_devices[-1] == "k8s.device-plugin.nvidia.com/imex-channel=0"
    mounted = allocate(resource, [resource.devices[0].id],
                       Settings(imex_channel_ids=(0,), device_list_strategy=(ListStrategy.VOLUME_MOUNTS,)))
    assert mounted.mounts[-1].container_path == "/var/run/nvidia-container-devices/imex/0"


@pytest.mark.parametrize(
    ("environ", "message"),
    [({"IMEX_CHANNEL_IDS": "1"}, "only IMEX channel 0 is supported"),
     ({"DEVICE_DISCOVERY_STRATEGY": "tegra"}, "discovers GPUs through NVML only")],
)
def test_what_the_agent_cannot_do_is_refused(environ: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        resolve_settings({}, environ)
