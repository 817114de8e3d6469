"""The device plugin config file: what is accepted, what is refused, and which sharing applies."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.plugin_config import (
    Imex,
    PluginConfigError,
    ReplicatedResource,
    SharingStrategy,
    load_plugin_config,
    parse_plugin_config,
)

TIME_SLICING = """
version: v1
flags:
  migStrategy: single
  gfd:
    oneshot: true
    sleepInterval: 30s
sharing:
  timeSlicing:
    resources:
      - name: nvidia.com/gpu
        replicas: 4
"""


def test_time_slicing_config() -> None:
    config = parse_plugin_config(TIME_SLICING)
    assert config.version == "v1"
    assert config.flag("migStrategy") == "single"
    assert config.flag("gfd", "sleepInterval") == "30s"
    assert config.flag("gfd", "noTimestamp") is None
    assert config.flag("plugin", "passDeviceSpecs") is None
    sharing = config.sharing
    assert sharing.strategy is SharingStrategy.TIME_SLICING
    assert sharing.replication_of("nvidia.com/gpu") == ReplicatedResource("nvidia.com/gpu", 4)
    assert sharing.replication_of("nvidia.com/mig-1g.10gb") is None
    assert sharing.time_slicing is not None and not sharing.time_slicing.fail_requests_greater_than_one


def test_bare_names_get_the_nvidia_prefix_and_rename_by_default_renames() -> None:
    config = parse_plugin_config(
        "sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources: [{name: gpu, replicas: 2}]\n"
    )
    resource = config.sharing.replication_of("nvidia.com/gpu")
    assert resource is not None
    assert (resource.name, resource.rename, resource.renamed) == ("nvidia.com/gpu", "nvidia.com/gpu.shared", True)


@pytest.mark.parametrize(
    ("block", "setting", "expected"),
    [
        ("mps", "", True),
        ("mps", "    failRequestsGreaterThanOne: null\n", True),
        ("mps", "    failRequestsGreaterThanOne: false\n", False),
        ("mps", "    failRequestsGreaterThanOne: true\n", True),
        ("timeSlicing", "", False),
        ("timeSlicing", "    failRequestsGreaterThanOne: true\n", True),
    ],
)
def test_fail_requests_greater_than_one_defaults_only_when_unset(block: str, setting: str, expected: bool) -> None:
    """MPS defaults `failRequestsGreaterThanOne` to true only when unset; an explicit false stands.

    NVIDIA k8s-device-plugin v0.20.0, api/config/v1/config.go `NewConfig` (sets the MPS value to true only when
    the pointer is nil) and api/config/v1/replicas.go `ReplicatedResources.UnmarshalJSON` (a *bool, nil when
    absent); internal/rm/rm.go `ValidateRequest` then applies it for time-slicing and MPS alike.
    """
    config = parse_plugin_config(
        f"sharing:\n  {block}:\n{setting}    resources: [{{name: nvidia.com/gpu, replicas: 10}}]\n")
    parsed = config.sharing.mps if block == "mps" else config.sharing.time_slicing
    assert parsed is not None and parsed.fail_requests_greater_than_one is expected


def test_a_non_boolean_fail_requests_setting_names_the_field() -> None:
    with pytest.raises(PluginConfigError, match=r"sharing.mps.failRequestsGreaterThanOne must be true or false"):
        parse_plugin_config("sharing:\n  mps:\n    failRequestsGreaterThanOne: 'no'\n"
                            "    resources: [{name: gpu, replicas: 2}]\n")


def test_mps_block_is_where_replication_is_looked_up_whenever_present() -> None:
    config = parse_plugin_config(
        "sharing:\n"
        "  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 4}]\n"
        "  mps:\n    resources: [{name: nvidia.com/mig-1g.10gb, replicas: 2}]\n"
    )
    assert config.sharing.strategy is SharingStrategy.MPS
    assert config.sharing.replication_of("nvidia.com/gpu") is None


def test_custom_rename_and_devices_are_ignored() -> None:
    config = parse_plugin_config(
        "sharing:\n  timeSlicing:\n    resources:\n"
        "      - name: gpu\n"
        "        replicas: 3\n"
        "        rename: gpu-shared\n"
        "        devices: [0, '1', '0:1', GPU-b1028956-cfa2-0990-bf4a-5da9abb51763]\n"
    )
    resource = config.sharing.replication_of("nvidia.com/gpu")
    assert resource is not None
    assert (resource.rename, resource.devices.all, resource.replicas) == ("", True, 3)


def test_empty_file_and_missing_version_mean_v1_without_sharing() -> None:
    config = parse_plugin_config("")
    assert config.version == "v1"
    assert config.sharing.strategy is SharingStrategy.NONE
    assert config.sharing.replicated is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: v2\n", "unknown version: v2"),
        ("sharing:\n  timeSlicing: {}\n", "sharing.timeSlicing: no resources specified"),
        ("sharing:\n  mps:\n    resources: []\n", "sharing.mps: no resources specified"),
        ("sharing:\n  timeSlicing:\n    resources: [{replicas: 2}]\n", "no resource name specified"),
        ("sharing:\n  timeSlicing:\n    resources: [{name: gpu}]\n", "no replicas specified for nvidia.com/gpu"),
        ("sharing:\n  timeSlicing:\n    resources: [{name: gpu, replicas: 1}]\n", "must be >= 2"),
        ("sharing:\n  timeSlicing:\n    resources: [{name: GPU_X, replicas: 2}]\n", "invalid resource name: 'GPU_X' is not a"),
        (
            "sharing:\n  timeSlicing:\n    resources: [{name: gpu, replicas: 2, devices: some}]\n",
            "only valid string is 'all'",
        ),
        ("sharing:\n  timeSlicing:\n    resources: [{name: gpu, replicas: 2, devices: 0}]\n", "must be > 0"),
        (
            "sharing:\n  timeSlicing:\n    resources: [{name: gpu, replicas: 2, devices: [GPU-xyz]}]\n",
            "unsupported device reference",
        ),
        (
            "sharing:\n  timeSlicing:\n    renameByDefault: 'yes'\n    resources: [{name: gpu, replicas: 2}]\n",
            "must be true or false",
        ),
        ("- a\n- b\n", "must be a mapping"),
        ("flags: [1]\n", "flags must be a mapping"),
        ("sharing: {timeSlicing: [\n", "unmarshal error"),
    ],
)
def test_refused_configs(text: str, message: str) -> None:
    with pytest.raises(PluginConfigError, match=message):
        parse_plugin_config(text)


def test_load_from_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(TIME_SLICING)
    assert load_plugin_config(path).sharing.strategy is SharingStrategy.TIME_SLICING
    with pytest.raises(PluginConfigError, match="error opening config file"):
        load_plugin_config(tmp_path / "missing.yaml")


def test_the_imex_section_is_kept() -> None:
    config = parse_plugin_config("version: v1\nimex:\n  channelIDs: [0]\n  required: true\n")
    assert config.imex == Imex(channel_ids=(0,), required=True)
    assert parse_plugin_config("version: v1\n").imex is None
    assert parse_plugin_config("imex: {}\n").imex == Imex()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("imex:\n  channelIDs: [1]\n", "imex.channelIDs [1]: only IMEX channel 0 is supported"),
        ("imex:\n  channelIDs: 0\n", "imex.channelIDs must be a list of channel numbers"),
        ("imex:\n  channelIDs: [zero]\n", "imex.channelIDs must be a list of channel numbers"),
        ("imex:\n  required: sometimes\n", "imex.required must be true or false"),
        ("imex:\n  channels: [0]\n", "imex: unknown key(s) channels; expected channelIDs, required"),
        ("imex: [0]\n", "imex must be a mapping"),
    ],
)
def test_bad_imex_sections_are_refused(text: str, message: str) -> None:
    with pytest.raises(PluginConfigError) as refused:
        parse_plugin_config(text)
    assert message in str(refused.value)


def test_unknown_top_level_keys_are_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    parse_plugin_config("version: v1\nimexx: {}\n")
    assert "config file key 'imexx' is not part of the v1 format" in caplog.text
