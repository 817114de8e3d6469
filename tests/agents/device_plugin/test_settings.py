"""Device plugin settings: flag > variable > config file > default, and clear errors for bad files and values."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.device_plugin.settings import (
    AllocationPolicy,
    IdStrategy,
    ListStrategy,
    MigStrategy,
    SettingsError,
    resolve_settings,
)

FILE = """
version: v1
flags:
  migStrategy: mixed
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: [cdi-cri, envvar]
    deviceIDStrategy: index
    sharedDevicesAllocationPolicy: packed
"""


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


def test_defaults_are_nvidias() -> None:
    settings = resolve_settings({}, {})
    assert settings.mig_strategy is MigStrategy.NONE
    assert settings.device_list_strategy == (ListStrategy.ENVVAR,)
    assert settings.device_id_strategy is IdStrategy.UUID
    assert settings.kubelet_socket == "/var/lib/kubelet/device-plugins/kubelet.sock"
    assert not settings.pass_device_specs and settings.fail_on_init_error
    assert settings.device_root == "/"


def test_file_flags_apply_and_env_and_flags_win(tmp_path: Path) -> None:
    path = _file(tmp_path, FILE)
    settings = resolve_settings({"config_file": path}, {})
    assert settings.mig_strategy is MigStrategy.MIXED
    assert settings.pass_device_specs
    assert settings.device_list_strategy == (ListStrategy.CDI_CRI, ListStrategy.ENVVAR)
    assert settings.device_id_strategy is IdStrategy.INDEX
    assert settings.allocation_policy is AllocationPolicy.PACKED
    environ = {"CONFIG_FILE": path, "MIG_STRATEGY": "single", "DEVICE_LIST_STRATEGY": "volume-mounts"}
    settings = resolve_settings({"mig_strategy": "none"}, environ)
    assert settings.mig_strategy is MigStrategy.NONE
    assert settings.device_list_strategy == (ListStrategy.VOLUME_MOUNTS,)


def test_dev_root_defaults_to_the_driver_root() -> None:
    assert resolve_settings({}, {"NVIDIA_DRIVER_ROOT": "/run/nvidia/driver"}).device_root == "/run/nvidia/driver"
    assert resolve_settings({"dev_root": "/host"}, {"NVIDIA_DRIVER_ROOT": "/d"}).device_root == "/host"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: v2\n", "unknown version: v2"),
        ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - {name: gpu, replicas: 1}\n",
         "number of replicas for nvidia.com/gpu must be >= 2"),
        ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - {name: " + "a" * 60 + ", replicas: 2}\n",
         "is not a device-plugin resource name: nvidia.com/ and lower-case letters"),
        ("version: v1\nflags: {migStrategy: mixed, mpsRoot: /run/nvidia/mps}\n"
         "sharing:\n  mps:\n    resources:\n      - {name: gpu, replicas: 2}\n",
         "sharing.mps cannot be used with migStrategy mixed"),
        ("version: v1\nsharing:\n  mps:\n    resources:\n      - {name: gpu, replicas: 2}\n",
         "sharing.mps needs the MPS root"),
        ("version: v1\nflags: {plugin: {deviceListStrategy: nvml}}\n",
         "invalid value 'nvml' for config file flags.plugin.deviceListStrategy"),
        ("version: v1\nflags: {plugin: {passDeviceSpecs: yes-please}}\n",
         "config file flags.plugin.passDeviceSpecs"),
        ("version: v1\nflags: [1]\n", "flags must be a mapping"),
        ("{{{", "unable to load config file"),
    ],
)
def test_bad_config_files_are_clear_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SettingsError, match=None) as refused:
        resolve_settings({"config_file": _file(tmp_path, text)}, {})
    assert message in str(refused.value)


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="unable to load config file .*nope.yaml"):
        resolve_settings({}, {"CONFIG_FILE": str(tmp_path / "nope.yaml")})


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"MIG_STRATEGY": "some"}, "invalid value 'some' for MIG_STRATEGY"),
        ({"DEVICE_LIST_STRATEGY": "envvar,cdi"}, "invalid value 'envvar,cdi' for DEVICE_LIST_STRATEGY"),
        ({"PASS_DEVICE_SPECS": "maybe"}, "invalid value 'maybe' for PASS_DEVICE_SPECS"),
        ({"DP_HEALTH_RECOVERY_PERIOD": "-1s"}, "DP_HEALTH_RECOVERY_PERIOD"),
    ],
)
def test_bad_variables_name_the_variable(environ: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as refused:
        resolve_settings({}, environ)
    assert message in str(refused.value)


def test_the_config_files_imex_section_sets_the_channels_unless_a_flag_or_variable_does(tmp_path: Path) -> None:
    path = _file(tmp_path, "version: v1\nimex:\n  channelIDs: [0]\n  required: true\n")
    settings = resolve_settings({"config_file": path}, {})
    assert (settings.imex_channel_ids, settings.imex_required) == ((0,), True)
    settings = resolve_settings({"config_file": path}, {"IMEX_CHANNEL_IDS": "", "IMEX_REQUIRED": "false"})
    assert (settings.imex_channel_ids, settings.imex_required) == ((), False)
    settings = resolve_settings({"config_file": path, "imex_required": "false"}, {})
    assert (settings.imex_channel_ids, settings.imex_required) == ((0,), False)


def test_a_bad_imex_section_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"unable to load config file .*only IMEX channel 0 is supported"):
        resolve_settings({"config_file": _file(tmp_path, "imex: {channelIDs: [3]}\n")}, {})
