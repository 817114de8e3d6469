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
TYPE_NAME = re.compile(r"^[0-9A-Za-z-]+-(\d+-)?\d+[CQ](ME|GFX)?$")


def test_every_type_has_one_config_with_all_devices() -> None:
    document = configs.configs_document()
    types = configs.vgpu_types()
    assert len(types) == 710
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


def test_boards_repeat_only_for_types_nvidia_appended() -> None:
    boards = [board for board, _ in configs.BOARDS]
    assert len(set(boards)) == 51
    assert sorted(b for b in set(boards) if boards.count(b) > 1) == ["6000D", "DC"]


def test_default_picks_a_known_type_for_each_device_id() -> None:
    types = configs.vgpu_types()
    entries = configs.default_config()
    assert len(entries) == len(configs.DEFAULTS) == 56
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


# --- every config of NVIDIA's v26.7.0 file ----------------------------------------------------------------------

#: assets/state-vgpu-device-manager/0500_configmap.yaml at v26.7.0, transcribed in file order: `<board>:` then its
#: types as `<suffix>:<instances>` (a config `<board>-<suffix>` per type; continuation lines are indented).
NVIDIA_V26_7_0_TYPES = """
6000D: 1-42C:2 1-42Q:2 2-84C:1 2-84Q:1 84C:1 84Q:1
A2: 1Q:16 2Q:8 4C:4 4Q:4 8C:2 8Q:2 16C:1 16Q:1
A10: 1Q:24 2Q:12 3Q:8 4C:6 4Q:6 6C:4 6Q:4 8C:3 8Q:3 12C:2 12Q:2 24C:1 24Q:1
A16: 1Q:16 2Q:8 4C:4 4Q:4 8C:2 8Q:2 16C:1 16Q:1
A30: 1-6C:4 1-6CME:1 2-12C:2 2-12CME:1 4C:6 4-24C:1 6C:4 8C:3 12C:2 24C:1
A40: 1Q:32 2Q:24 3Q:16 4C:12 4Q:12 6C:8 6Q:8 8C:6 8Q:6 12C:4 12Q:4 16C:3 16Q:3 24C:2 24Q:2 48C:1 48Q:1
A100D: 1-10C:7 1-10CME:1 1-20C:4 2-20C:3 3-40C:2 4C:20 4-40C:1 7-80C:1 8C:10 10C:8 16C:5 20C:4 40C:2 80C:1
A100DX: 1-10C:7 1-10CME:1 1-20C:4 2-20C:3 3-40C:2 4C:20 4-40C:1 7-80C:1 8C:10 10C:8 16C:5 20C:4 40C:2 80C:1
A100X: 1-5C:7 1-5CME:1 1-10C:4 2-10C:3 3-20C:2 4C:10 4-20C:1 5C:8 7-40C:1 8C:5 10C:4 20C:2 40C:1
A100: 1-5C:7 1-5CME:1 1-10C:4 2-10C:3 3-20C:2 4C:10 4-20C:1 5C:8 7-40C:1 8C:5 10C:4 20C:2 40C:1
A800D: 1-10C:7 1-10CME:1 1-20C:4 2-20C:3 3-40C:2 4C:20 4-40C:1 7-80C:1 8C:10 10C:8 16C:5 20C:4 40C:2 80C:1
A800DX: 1-10C:7 1-10CME:1 1-20C:4 2-20C:3 3-40C:2 4C:20 4-40C:1 7-80C:1 8C:10 10C:8 16C:5 20C:4 40C:2 80C:1
A800: 1-5C:7 1-5CME:1 1-10C:4 2-10C:3 3-20C:2 4C:10 4-20C:1 5C:8 7-40C:1 8C:5 10C:4 20C:2 40C:1
B200X: 1-23C:7 1-23CME:1 1-45C:4 2-45C:3 3-90C:2 4-90C:1 7-180C:1 180C:1
DC: 1-2Q:48 1-3Q:32 1-4Q:24 1-6Q:16 1-8C:12 1-8Q:12 1-12C:8 1-12Q:8 1-24C:4 1-24Q:4 2-12C:8 2-12Q:8 2-16C:6
    2-16Q:6 2-24C:4 2-24Q:4 2-48C:2 2-48Q:2 3Q:32 4Q:24 4-24C:4 4-24Q:4 4-32C:3 4-32Q:3 4-48C:2 4-48Q:2 4-96C:1
    4-96Q:1 6Q:16 8C:12 8Q:12 12C:8 12Q:8 16C:6 16Q:6 24C:4 24Q:4 32C:3 32Q:3 48C:2 48Q:2 96C:1 96Q:1
GB200: 1-24C:7 1-24CME:1 1-47C:4 2-47C:3 3-95C:2 4-95C:1 7-189C:1 189C:1
GH200L: 1-18C:7 1-18CME:1 1-36C:4 2-36C:3 3-72C:2 4-72C:1 7-144C:1 144C:1
GH200: 1-12C:7 1-12CME:1 1-24C:4 2-24C:3 3-48C:2 4-48C:1 7-96C:1 96C:1
H20X: 1-18C:7 1-18CME:1 1-35C:4 2-35C:3 3-71C:2 4C:32 4-71C:1 7C:20 7-141C:1 8C:16 14C:10 17C:8 28C:5 35C:4
    70C:2 141C:1
H20: 1-12C:7 1-12CME:1 1-24C:4 2-24C:3 3-48C:2 4C:24 4-48C:1 6C:16 7-96C:1 8C:12 12C:8 16C:6 24C:4 32C:3 48C:2
    96C:1
H100L: 1-12C:7 1-12CME:1 1-24C:4 2-24C:3 3-47C:2 4C:23 4-47C:1 6C:15 7-94C:1 11C:8 15C:6 23C:4 47C:2 94C:1
H100XL: 1-12C:7 1-12CME:1 1-24C:4 2-24C:3 3-47C:2 4C:23 4-47C:1 6C:15 7-94C:1 11C:8 15C:6 23C:4 47C:2 94C:1
H100XM: 1-10C:7 1-10CME:1 1-20C:4 2-20C:3 3-40C:2 4C:20 4-40C:1 5C:16 7-80C:1 8C:10 10C:8 16C:5 20C:4 40C:2
    80C:1
H100XS: 1-8C:7 1-8CME:1 1-16C:4 2-16C:3 3-32C:2 4C:16 4-32C:1 7-64C:1 8C:8 16C:4 32C:2 64C:1
H100: 1-10C:7 1-10CME:1 1-20C:4 2-20C:3 3-40C:2 4C:20 4-40C:1 5C:16 7-80C:1 8C:10 10C:8 16C:5 20C:4 40C:2 80C:1
H200X: 1-18C:7 1-18CME:1 1-35C:4 2-35C:3 3-71C:2 4C:32 4-71C:1 7C:20 7-141C:1 8C:16 14C:10 17C:8 28C:5 35C:4
    70C:2 141C:1
H200: 1-18C:7 1-18CME:1 1-35C:4 2-35C:3 3-71C:2 4C:32 4-71C:1 7C:20 7-141C:1 8C:16 14C:10 17C:8 28C:5 35C:4
    70C:2 141C:1
H800L: 1-12C:7 1-12CME:1 1-24C:4 2-24C:3 3-47C:2 4C:23 4-47C:1 6C:15 7-94C:1 11C:8 15C:6 23C:4 47C:2 94C:1
H800XM: 1-10C:7 1-10CME:1 1-20C:4 2-20C:3 3-40C:2 4C:20 4-40C:1 5C:16 7-80C:1 8C:10 10C:8 16C:5 20C:4 40C:2
    80C:1
H800: 1-10C:7 1-10CME:1 1-20C:4 2-20C:3 3-40C:2 4C:20 4-40C:1 5C:16 7-80C:1 8C:10 10C:8 16C:5 20C:4 40C:2 80C:1
L2: 1Q:24 2Q:12 3Q:8 4C:6 4Q:6 6C:4 6Q:4 8C:3 8Q:3 12C:2 12Q:2 24C:1 24Q:1
L4: 1Q:24 2Q:12 3Q:8 4C:6 4Q:6 6C:4 6Q:4 8C:3 8Q:3 12C:2 12Q:2 24C:1 24Q:1
L20: 1Q:32 2Q:24 3Q:16 4C:12 4Q:12 6C:8 6Q:8 8C:6 8Q:6 12C:4 12Q:4 16C:3 16Q:3 24C:2 24Q:2 48C:1 48Q:1
L40S: 1Q:32 2Q:24 3Q:16 4C:12 4Q:12 6C:8 6Q:8 8C:6 8Q:6 12C:4 12Q:4 16C:3 16Q:3 24C:2 24Q:2 48C:1 48Q:1
L40: 1Q:32 2Q:24 3Q:16 4C:12 4Q:12 6C:8 6Q:8 8C:6 8Q:6 12C:4 12Q:4 16C:3 16Q:3 24C:2 24Q:2 48C:1 48Q:1
RTX5000-Ada: 1Q:32 2Q:16 4C:8 4Q:8 8C:4 8Q:4 16C:2 16Q:2 32C:1 32Q:1
RTX5880-Ada: 1Q:32 2Q:24 3Q:16 4C:12 4Q:12 6C:8 6Q:8 8C:6 8Q:6 12C:4 12Q:4 16C:3 16Q:3 24C:2 24Q:2 48C:1 48Q:1
RTX6000P: 1Q:24 2Q:12 3Q:8 4C:6 4Q:6 6C:4 6Q:4 8C:3 8Q:3 12C:2 12Q:2 24C:1 24Q:1
RTX6000-Ada: 1Q:32 2Q:24 3Q:16 4C:12 4Q:12 6C:8 6Q:8 8C:6 8Q:6 12C:4 12Q:4 16C:3 16Q:3 24C:2 24Q:2 48C:1 48Q:1
RTX8000P: 1Q:32 2Q:24 3Q:16 4C:8 4Q:12 6C:8 6Q:8 8C:6 8Q:6 12C:4 12Q:4 16C:3 16Q:3 24C:2 24Q:2 48C:1 48Q:1
RTXA5000: 1Q:24 2Q:12 3Q:8 4C:6 4Q:6 6C:4 6Q:4 8C:3 8Q:3 12C:2 12Q:2 24C:1 24Q:1
RTXA5500: 1Q:24 2Q:12 3Q:8 4C:6 4Q:6 6C:4 6Q:4 8C:3 8Q:3 12C:2 12Q:2 24C:1 24Q:1
RTXA6000: 1Q:32 2Q:24 3Q:16 4C:12 4Q:12 6C:8 6Q:8 8C:6 8Q:6 12C:4 12Q:4 16C:3 16Q:3 24C:2 24Q:2 48C:1 48Q:1
T4: 1Q:16 2Q:8 4C:4 4Q:4 8C:2 8Q:2 16C:1 16Q:1
V100D: 1Q:32 2Q:16 4C:8 4Q:8 8C:4 8Q:4 16C:2 16Q:2 32C:1 32Q:1
V100DX: 1Q:32 2Q:16 4C:8 4Q:8 8C:4 8Q:4 16C:2 16Q:2 32C:1 32Q:1
V100L: 1Q:16 2Q:8 4C:4 4Q:4 8C:2 8Q:2 16C:1 16Q:1
V100S: 1Q:32 2Q:16 4C:8 4Q:8 8C:4 8Q:4 16C:2 16Q:2 32C:1 32Q:1
V100X: 1Q:16 2Q:8 4C:4 4Q:4 8C:2 8Q:2 16C:1 16Q:1
V100: 1Q:16 2Q:8 4C:4 4Q:4 8C:2 8Q:2 16C:1 16Q:1
6000D: 1-42CGFX:2 1-42QGFX:2 2-84CGFX:1 2-84QGFX:1
B300X: 1-34C:7 1-34CME:1 1-67C:4 2-67C:3 3-135C:2 4-135C:1 7-269C:1 269C:1
DC: 1-2QGFX:48 1-3QGFX:32 1-4QGFX:24 1-6QGFX:16 1-8CGFX:12 1-8QGFX:12 1-12CGFX:8 1-12QGFX:8 1-16C:2 1-16Q:2
    1-24CGFX:4 1-24QGFX:4 2-8C:4 2-8Q:4 2-12CGFX:8 2-12QGFX:8 2-16CGFX:6 2-16QGFX:6 2-24CGFX:4 2-24QGFX:4
    2-32C:1 2-32Q:1 2-48CGFX:2 2-48QGFX:2 4-24CGFX:4 4-24QGFX:4 4-32CGFX:3 4-32QGFX:3 4-48CGFX:2 4-48QGFX:2
    4-96CGFX:1 4-96QGFX:1
"""
#: The same file's `default` config, in order: `<PCI device id> <vGPU type> <instances>`.
NVIDIA_V26_7_0_DEFAULT = """
1DB1 V100X-8Q 2 | 1DB3 V100L-8Q 2 | 1DB4 V100-8Q 2 | 1DB5 V100DX-16Q 2
1DB6 V100D-16Q 2 | 1DF6 V100S-16Q 2 | 1E78 RTX8000P-24Q 2 | 1E78 RTX6000P-12Q 2
1EB8 T4-8Q 2 | 20B0 A100X-20C 2 | 20B2 A100DX-40C 2 | 20B5 A100D-40C 2
20B8 A100D-40C 2 | 20B7 A30-12C 2 | 20B9 A30-12C 2 | 20F1 A100-20C 2
20F3 A800DX-40C 2 | 20F5 A800D-40C 2 | 20FD A800D-40C 2 | 20F6 A800-20C 2
2230 RTXA6000-24Q 2 | 2231 RTXA5000-12Q 2 | 2233 RTXA5500-12Q 2 | 2235 A40-24Q 2
2236 A10-12Q 2 | 2321 H100L-47C 2 | 2322 H800-40C 2 | 2324 H800XM-40C 2
2329 H20-48C 2 | 232C H20X-70C 2 | 2330 H100XM-40C 2 | 2336 H100XM-40C 2
2331 H100-40C 2 | 2335 H200X-70C 2 | 2337 H100XS-32C 2 | 2339 H100XL-47C 2
233A H800L-47C 2 | 233B H200-70C 2 | 2342 GH200-96C 1 | 2348 GH200L-144C 1
25B6 A16-8Q 2 | 25B6 A2-8Q 2 | 26B1 RTX6000-Ada-24Q 2 | 26B2 RTX5000-Ada-16Q 2
26B3 RTX5880-Ada-24Q 2 | 26B5 L40-24Q 2 | 26B9 L40S-24Q 2 | 26BA L20-24Q 2
27B6 L2-12Q 2 | 27B8 L4-12Q 2 | 2901 B200X-180C 1 | 2941 GB200-189C 1
2BB5 DC-48Q 2 | 2BB9 6000D-84Q 1 | 2C3A DC-16Q 2 | 3182 B300X-269C 1
"""


def _nvidia_types() -> dict[str, int]:
    types: dict[str, int] = {}
    board = ""
    for token in NVIDIA_V26_7_0_TYPES.split():
        if token.endswith(":"):
            board = token[:-1]
            continue
        suffix, count = token.split(":")
        assert f"{board}-{suffix}" not in types, token
        types[f"{board}-{suffix}"] = int(count)
    return types


def test_every_config_of_nvidia_v26_7_0_in_order() -> None:
    """NVIDIA's v26.7.0 `default-vgpu-devices-config` (assets/state-vgpu-device-manager/0500_configmap.yaml) has 711
    configs: one per vGPU type, each giving every GPU as many of that type as fit, then `default`. Every name and
    count must match, in NVIDIA's order (B300X, DC and 6000D `GFX` types were missing)."""
    nvidia = _nvidia_types()
    assert len(nvidia) + 1 == 711
    document = configs.configs_document()["vgpu-configs"]
    assert list(document) == [*nvidia, "default"]
    for name, count in nvidia.items():
        assert document[name] == [{"devices": "all", "vgpu-devices": {name: count}}], name


def test_default_config_has_every_device_id_of_nvidia_v26_7_0() -> None:
    """The `default` config of the same file: one entry per PCI device id (0x2C3A10DE and 0x318210DE were missing),
    each with NVIDIA's type and instance count, in NVIDIA's order."""
    entries = [entry.split() for entry in NVIDIA_V26_7_0_DEFAULT.replace("|", "\n").splitlines() if entry.strip()]
    expected = [
        {"device-filter": f"0x{device}10DE", "devices": "all", "vgpu-devices": {vgpu_type: int(count)}}
        for device, vgpu_type, count in entries
    ]
    assert len(expected) == 56
    assert configs.default_config() == expected
