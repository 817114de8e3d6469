"""The built-in vGPU device configs: NVIDIA's `default-vgpu-devices-config`, spot-checked type by type."""

from __future__ import annotations

import re

import pytest
import yaml

from gpu_operator.render.operands import vgpu_device_configs as configs

# Values read from upstream assets/state-vgpu-device-manager/0500_configmap.yaml, one or two per profile family.
UPSTREAM_COUNTS = {
    "6000D-1-42Q": 2, "A2-1Q": 16, "A10-3Q": 8, "A16-16C": 1, "A30-1-6CME": 1, "A30-4C": 6, "A40-1Q": 32,
    "A40-2Q": 24, "A100D-4C": 20, "A100-5C": 8, "A800DX-7-80C": 1, "B200X-1-23C": 7, "DC-1-2Q": 48, "DC-4Q": 24,
    "GB200-3-95C": 2, "GH200L-144C": 1, "GH200-1-12CME": 1, "H20X-4C": 32, "H20-6C": 16, "H100L-4C": 23,
    "H100XL-11C": 8, "H100XM-5C": 16, "H100XS-8C": 8, "H100-1-10C": 7, "H200-8C": 16, "H200X-17C": 8,
    "H800L-6C": 15, "H800-80C": 1, "L2-1Q": 24, "L20-3Q": 16, "L40S-48Q": 1, "RTX5000-Ada-2Q": 16,
    "RTX6000P-24C": 1, "RTX8000P-4C": 8, "RTX8000P-4Q": 12, "RTXA6000-1Q": 32, "T4-2Q": 8, "V100D-32Q": 1,
    "V100L-16C": 1, "V100-1Q": 16,
}
TYPE_NAME = re.compile(r"^[0-9A-Za-z-]+-(\d+-)?\d+[CQ](ME)?$")


def test_every_type_has_one_config_with_all_devices() -> None:
    document = configs.configs_document()
    types = configs.vgpu_types()
    assert len(types) == 666
    assert list(document["vgpu-configs"]) == [*types, "default"]
    for name, count in types.items():
        assert document["vgpu-configs"][name] == [{"devices": "all", "vgpu-devices": {name: count}}]


@pytest.mark.parametrize(("name", "count"), sorted(UPSTREAM_COUNTS.items()))
def test_counts_match_upstream(name: str, count: int) -> None:
    assert configs.vgpu_types()[name] == count


def test_type_names_follow_nvidia_naming() -> None:
    for name, count in configs.vgpu_types().items():
        assert TYPE_NAME.match(name), name
        assert 1 <= count <= 48, name
        if name.endswith("ME"):
            assert count == 1, name


def test_boards_are_listed_once() -> None:
    boards = [board for board, _ in configs.BOARDS]
    assert len(boards) == len(set(boards)) == 50


def test_default_picks_a_known_type_for_each_device_id() -> None:
    types = configs.vgpu_types()
    entries = configs.default_config()
    assert len(entries) == len(configs.DEFAULTS) == 54
    for entry in entries:
        assert re.fullmatch(r"0x[0-9A-F]{4}10DE", entry["device-filter"]), entry
        assert entry["devices"] == "all"
        ((vgpu_type, count),) = entry["vgpu-devices"].items()
        assert vgpu_type in types and count <= types[vgpu_type], entry
    assert entries[0] == {"device-filter": "0x1DB110DE", "devices": "all", "vgpu-devices": {"V100X-8Q": 2}}
    assert {"device-filter": "0x2BB910DE", "devices": "all", "vgpu-devices": {"6000D-84Q": 1}} in entries


def test_yaml_round_trips() -> None:
    assert yaml.safe_load(configs.config_yaml()) == configs.configs_document()
    assert len(configs.config_yaml().encode()) < 1024 * 1024
