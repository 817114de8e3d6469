"""mig-parted config files: clear errors for bad files, layout selection by device filter and index."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.mig_manager.config import GpuLayout, MigConfigError, load_config, parse_config, select

A100_80 = "0x20B210DE"
H100_80 = "0x233010DE"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: v2\nmig-configs: {a: [{devices: all, mig-enabled: false}]}\n", r"version: .*'v1'"),
        ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, mig-devices: {1g.ten: 7}}]}\n",
         r"'1g.ten' is not a MIG profile"),
        ("version: v1\nmig-configs: {a: [{mig-enabled: true}]}\n", r"mig-configs\.a\.0\.devices: Field required"),
        ("version: v1\nmig-configs: {}\n", "define at least one MIG config"),
        ("- just a list\n", "expected a mapping"),
        ("version: [v1\n", "not valid YAML"),
    ],
)
def test_bad_files_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(MigConfigError, match=message):
        parse_config(text, "config.yaml")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MigConfigError, match=r"cannot read MIG config file .*absent.yaml"):
        load_config(tmp_path / "absent.yaml")


def test_select_by_filter_and_index() -> None:
    config = parse_config(
        "version: v1\nmig-configs:\n  mixed:\n"
        f"    - {{device-filter: ['{A100_80.lower()}'], devices: all, mig-enabled: true,\n"
        "        mig-devices: {1g.10gb: 7}}\n"
        f"    - {{device-filter: '{H100_80}', devices: [1], mig-enabled: false}}\n"
        "    - {devices: [2], mig-enabled: true, mig-devices: {7g.80gb: 1, 1g.10gb: 0}}\n",
        "config.yaml",
    )
    chosen = select(config, "mixed", [(0, A100_80), (1, H100_80), (2, A100_80), (3, H100_80)])
    assert chosen == {
        0: GpuLayout(True, {"1g.10gb": 7}),
        1: GpuLayout(False, {}),
        2: GpuLayout(True, {"7g.80gb": 1}),  # the later layout wins; a zero count creates nothing
    }
    with pytest.raises(MigConfigError, match="no MIG config named 'other'.*defines mixed"):
        select(config, "other", [(0, A100_80)])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true}]}\n",
         r"mig-configs\.a\.0\.mig-devices: required when mig-enabled is true \(write 'mig-devices: \{\}'"),
        ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false}, "
         "{devices: [0], mig-enabled: false, mig-devices: {1g.10gb: 7}}]}\n",
         r"mig-configs\.a\.1\.mig-devices: must be empty when mig-enabled is false"),
    ],
)
def test_mig_enabled_and_mig_devices_must_agree(text: str, message: str) -> None:
    """NVIDIA/mig-parted v0.15.0 api/spec/v1/spec.go `MigConfigSpec.UnmarshalJSON`: "missing required field
    'mig-devices' when 'mig-enabled' is true" and "MIG devices included when 'mig-enabled' is false"."""
    with pytest.raises(MigConfigError, match=message):
        parse_config(text, "config.yaml")
    # MIG on with no devices is written with an empty mapping, and is fine
    parse_config("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, mig-devices: {}}]}\n", "c")
