"""The vGPU device manager's built-in configs (`default-vgpu-devices-config`), generated from a compact table.

The vGPU device manager reads a file of named configs in the `vgpu-device-manager` format:

```yaml
version: v1
vgpu-configs:
  A10-12Q:                      # one config per vGPU type: every GPU gets as many of it as fit
    - devices: all
      vgpu-devices: {A10-12Q: 2}
  default:                      # the config nodes get without a nvidia.com/vgpu.config label
    - device-filter: "0x223610DE"   # one entry per GPU model (PCI device id + NVIDIA vendor id)
      devices: all
      vgpu-devices: {A10-12Q: 2}
```

NVIDIA ships this file as 711 near-identical YAML configs. Here each GPU board lists its vGPU types as
`<type suffix>:<instances per GPU>`; boards with the same frame buffer share one profile. Type names follow
NVIDIA's scheme: `<board>-<frame buffer GB><series>` for time-sliced types (series Q: virtual workstation,
C: compute), `<board>-<slices>-<frame buffer GB>C` for MIG-backed types, a `ME` suffix for the MIG-backed
type that owns the media engines, and a `GFX` suffix on the graphics variants of the 6000D and DC types. The
instance counts are NVIDIA's published maxima per physical GPU; they are data, not a formula (many stop at 32,
and a few differ from "frame buffer / type size"). Boards are listed in the order of NVIDIA's file (v26.7.0),
which appends its newest types (6000D and DC `GFX` variants, B300X) after the rest, so a board may appear twice.

The `default` config gives each known GPU model two instances of its half-frame-buffer type (one full-size
instance on the largest boards), keyed by PCI device id.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["BOARDS", "DEFAULTS", "NVIDIA_VENDOR_ID", "vgpu_types", "default_config", "configs_document", "config_yaml"]

NVIDIA_VENDOR_ID = "10DE"

# Profiles shared by several boards, named after the board family and frame buffer they fit.
_Q16 = "1Q:16 2Q:8 4C:4 4Q:4 8C:2 8Q:2 16C:1 16Q:1"
_Q24 = "1Q:24 2Q:12 3Q:8 4C:6 4Q:6 6C:4 6Q:4 8C:3 8Q:3 12C:2 12Q:2 24C:1 24Q:1"
_Q32 = "1Q:32 2Q:16 4C:8 4Q:8 8C:4 8Q:4 16C:2 16Q:2 32C:1 32Q:1"
_Q48 = "1Q:32 2Q:24 3Q:16 4C:12 4Q:12 6C:8 6Q:8 8C:6 8Q:6 12C:4 12Q:4 16C:3 16Q:3 24C:2 24Q:2 48C:1 48Q:1"
_A100_40 = "1-5C:7 1-5CME:1 1-10C:4 2-10C:3 3-20C:2 4C:10 4-20C:1 5C:8 7-40C:1 8C:5 10C:4 20C:2 40C:1"
_A100_80 = "1-10C:7 1-10CME:1 1-20C:4 2-20C:3 3-40C:2 4C:20 4-40C:1 7-80C:1 8C:10 10C:8 16C:5 20C:4 40C:2 80C:1"
_H100_80 = "1-10C:7 1-10CME:1 1-20C:4 2-20C:3 3-40C:2 4C:20 4-40C:1 5C:16 7-80C:1 8C:10 10C:8 16C:5 20C:4 40C:2 80C:1"
_H100_94 = "1-12C:7 1-12CME:1 1-24C:4 2-24C:3 3-47C:2 4C:23 4-47C:1 6C:15 7-94C:1 11C:8 15C:6 23C:4 47C:2 94C:1"
_H200_141 = (
    "1-18C:7 1-18CME:1 1-35C:4 2-35C:3 3-71C:2 4C:32 4-71C:1 7C:20 7-141C:1 8C:16 14C:10 17C:8 28C:5 35C:4 "
    "70C:2 141C:1"
)

#: Board → its vGPU types (`<suffix>:<instances per GPU>`), in the order NVIDIA lists them.
BOARDS: tuple[tuple[str, str], ...] = (
    ("6000D", "1-42C:2 1-42Q:2 2-84C:1 2-84Q:1 84C:1 84Q:1"),
    ("A2", _Q16),
    ("A10", _Q24),
    ("A16", _Q16),
    ("A30", "1-6C:4 1-6CME:1 2-12C:2 2-12CME:1 4C:6 4-24C:1 6C:4 8C:3 12C:2 24C:1"),
    ("A40", _Q48),
    ("A100D", _A100_80),
    ("A100DX", _A100_80),
    ("A100X", _A100_40),
    ("A100", _A100_40),
    ("A800D", _A100_80),
    ("A800DX", _A100_80),
    ("A800", _A100_40),
    ("B200X", "1-23C:7 1-23CME:1 1-45C:4 2-45C:3 3-90C:2 4-90C:1 7-180C:1 180C:1"),
    ("DC", (
        "1-2Q:48 1-3Q:32 1-4Q:24 1-6Q:16 1-8C:12 1-8Q:12 1-12C:8 1-12Q:8 1-24C:4 1-24Q:4 "
        "2-12C:8 2-12Q:8 2-16C:6 2-16Q:6 2-24C:4 2-24Q:4 2-48C:2 2-48Q:2 3Q:32 4Q:24 "
        "4-24C:4 4-24Q:4 4-32C:3 4-32Q:3 4-48C:2 4-48Q:2 4-96C:1 4-96Q:1 6Q:16 8C:12 8Q:12 "
        "12C:8 12Q:8 16C:6 16Q:6 24C:4 24Q:4 32C:3 32Q:3 48C:2 48Q:2 96C:1 96Q:1"
    )),
    ("GB200", "1-24C:7 1-24CME:1 1-47C:4 2-47C:3 3-95C:2 4-95C:1 7-189C:1 189C:1"),
    ("GH200L", "1-18C:7 1-18CME:1 1-36C:4 2-36C:3 3-72C:2 4-72C:1 7-144C:1 144C:1"),
    ("GH200", "1-12C:7 1-12CME:1 1-24C:4 2-24C:3 3-48C:2 4-48C:1 7-96C:1 96C:1"),
    ("H20X", _H200_141),
    ("H20", (
        "1-12C:7 1-12CME:1 1-24C:4 2-24C:3 3-48C:2 4C:24 4-48C:1 6C:16 7-96C:1 8C:12 12C:8 16C:6 24C:4 "
        "32C:3 48C:2 96C:1"
    )),
    ("H100L", _H100_94),
    ("H100XL", _H100_94),
    ("H100XM", _H100_80),
    ("H100XS", "1-8C:7 1-8CME:1 1-16C:4 2-16C:3 3-32C:2 4C:16 4-32C:1 7-64C:1 8C:8 16C:4 32C:2 64C:1"),
    ("H100", _H100_80),
    ("H200X", _H200_141),
    ("H200", _H200_141),
    ("H800L", _H100_94),
    ("H800XM", _H100_80),
    ("H800", _H100_80),
    ("L2", _Q24),
    ("L4", _Q24),
    ("L20", _Q48),
    ("L40S", _Q48),
    ("L40", _Q48),
    ("RTX5000-Ada", _Q32),
    ("RTX5880-Ada", _Q48),
    ("RTX6000P", _Q24),
    ("RTX6000-Ada", _Q48),
    # Quadro RTX 8000 allows fewer 4 GB compute instances than 4 GB workstation ones.
    ("RTX8000P", _Q48.replace("4C:12", "4C:8")),
    ("RTXA5000", _Q24),
    ("RTXA5500", _Q24),
    ("RTXA6000", _Q48),
    ("T4", _Q16),
    ("V100D", _Q32),
    ("V100DX", _Q32),
    ("V100L", _Q16),
    ("V100S", _Q32),
    ("V100X", _Q16),
    ("V100", _Q16),
    ("6000D", "1-42CGFX:2 1-42QGFX:2 2-84CGFX:1 2-84QGFX:1"),
    ("B300X", "1-34C:7 1-34CME:1 1-67C:4 2-67C:3 3-135C:2 4-135C:1 7-269C:1 269C:1"),
    ("DC", (
        "1-2QGFX:48 1-3QGFX:32 1-4QGFX:24 1-6QGFX:16 1-8CGFX:12 1-8QGFX:12 1-12CGFX:8 1-12QGFX:8 1-16C:2 1-16Q:2 "
        "1-24CGFX:4 1-24QGFX:4 2-8C:4 2-8Q:4 2-12CGFX:8 2-12QGFX:8 2-16CGFX:6 2-16QGFX:6 2-24CGFX:4 2-24QGFX:4 "
        "2-32C:1 2-32Q:1 2-48CGFX:2 2-48QGFX:2 4-24CGFX:4 4-24QGFX:4 4-32CGFX:3 4-32QGFX:3 4-48CGFX:2 4-48QGFX:2 "
        "4-96CGFX:1 4-96QGFX:1"
    )),
)

#: The `default` config: PCI device id → (vGPU type, instances per GPU), in NVIDIA's order. Two ids appear twice
#: because two boards share them (Quadro RTX 6000/8000 passive, A2/A16).
DEFAULTS: tuple[tuple[str, str, int], ...] = (
    ("1DB1", "V100X-8Q", 2), ("1DB3", "V100L-8Q", 2), ("1DB4", "V100-8Q", 2), ("1DB5", "V100DX-16Q", 2),
    ("1DB6", "V100D-16Q", 2), ("1DF6", "V100S-16Q", 2), ("1E78", "RTX8000P-24Q", 2), ("1E78", "RTX6000P-12Q", 2),
    ("1EB8", "T4-8Q", 2), ("20B0", "A100X-20C", 2), ("20B2", "A100DX-40C", 2), ("20B5", "A100D-40C", 2),
    ("20B8", "A100D-40C", 2), ("20B7", "A30-12C", 2), ("20B9", "A30-12C", 2), ("20F1", "A100-20C", 2),
    ("20F3", "A800DX-40C", 2), ("20F5", "A800D-40C", 2), ("20FD", "A800D-40C", 2), ("20F6", "A800-20C", 2),
    ("2230", "RTXA6000-24Q", 2), ("2231", "RTXA5000-12Q", 2), ("2233", "RTXA5500-12Q", 2), ("2235", "A40-24Q", 2),
    ("2236", "A10-12Q", 2), ("2321", "H100L-47C", 2), ("2322", "H800-40C", 2), ("2324", "H800XM-40C", 2),
    ("2329", "H20-48C", 2), ("232C", "H20X-70C", 2), ("2330", "H100XM-40C", 2), ("2336", "H100XM-40C", 2),
    ("2331", "H100-40C", 2), ("2335", "H200X-70C", 2), ("2337", "H100XS-32C", 2), ("2339", "H100XL-47C", 2),
    ("233A", "H800L-47C", 2), ("233B", "H200-70C", 2), ("2342", "GH200-96C", 1), ("2348", "GH200L-144C", 1),
    ("25B6", "A16-8Q", 2), ("25B6", "A2-8Q", 2), ("26B1", "RTX6000-Ada-24Q", 2), ("26B2", "RTX5000-Ada-16Q", 2),
    ("26B3", "RTX5880-Ada-24Q", 2), ("26B5", "L40-24Q", 2), ("26B9", "L40S-24Q", 2), ("26BA", "L20-24Q", 2),
    ("27B6", "L2-12Q", 2), ("27B8", "L4-12Q", 2), ("2901", "B200X-180C", 1), ("2941", "GB200-189C", 1),
    ("2BB5", "DC-48Q", 2), ("2BB9", "6000D-84Q", 1), ("2C3A", "DC-16Q", 2), ("3182", "B300X-269C", 1),
)


def vgpu_types() -> dict[str, int]:
    """Every vGPU type name → its maximum instances per GPU, board by board."""
    types: dict[str, int] = {}
    for board, profile in BOARDS:
        for entry in profile.split():
            suffix, count = entry.split(":")
            types[f"{board}-{suffix}"] = int(count)
    return types


def default_config() -> list[dict[str, Any]]:
    """The `default` config's entries, one per PCI device id."""
    return [
        {"device-filter": f"0x{device}{NVIDIA_VENDOR_ID}", "devices": "all", "vgpu-devices": {vgpu_type: count}}
        for device, vgpu_type, count in DEFAULTS
    ]


def configs_document() -> dict[str, Any]:
    """The whole config file as data: one config per vGPU type, then `default`."""
    configs: dict[str, Any] = {
        name: [{"devices": "all", "vgpu-devices": {name: count}}] for name, count in vgpu_types().items()
    }
    configs["default"] = default_config()
    return {"version": "v1", "vgpu-configs": configs}


def config_yaml() -> str:
    """`config.yaml` of the `default-vgpu-devices-config` ConfigMap."""
    return yaml.safe_dump(configs_document(), sort_keys=False, default_flow_style=False)
