"""A pool's custom MIG layout against its GPU: profile names and counts per GPU, checked as the GPU would.

Profile *names* were only checked for their form (`1g.10gb`), so a layout the GPU cannot create (`1g.5gb` on an
80 GB H100, eight `1g.10gb` where seven fit) reached the MIG manager, which fails on the node. The MIG catalog
gives each GPU's profiles and how many of each fit one GPU; the compute slices of all GPU instances together fit
the GPU's (7 on A100/H100). Compute-instance profiles (`1c.3g.40gb`) share one GPU instance: mig-parted v0.15.0
pkg/mig/config/config.go `SetMigConfig` reuses the GPU instance for consecutive compute instances of one profile.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config

AKS = {"resourceGroup": "rg", "clusterName": "c", "kubernetesVersion": "1.34"}
H100 = "Standard_ND96isr_H100_v5"
A100_40GB = "Standard_ND96asr_v4"


def layout(vm_size: str, *layouts: dict[str, Any]) -> dict[str, Any]:
    return {
        "aks": AKS, "network": {"enabled": False},
        "pools": [{"name": "mig", "vmSize": vm_size, "migConfig": "custom"}],
        "operator": {"mig": {"strategy": "mixed"}, "migManager": {"config": {"name": "my-mig", "default": ""}}},
        "configs": {"migManager": {"mig-configs": {"custom": [
            {"devices": "all", "mig-enabled": True, **entry} for entry in layouts]}}},
    }


def devices(mig_devices: dict[str, int], **entry: Any) -> dict[str, Any]:
    return {"mig-devices": mig_devices, **entry}


@pytest.mark.parametrize(("vm_size", "mig_devices"), [
    (H100, {"1g.10gb": 7}),
    (H100, {"3g.40gb": 2}),
    (H100, {"4g.40gb": 1, "3g.40gb": 1}),
    (H100, {"7g.80gb": 1}),
    (H100, {"2g.20gb": 3, "1g.10gb": 1}),
    (H100, {"1c.3g.40gb": 3}),
    (A100_40GB, {"1g.5gb": 7}),
])
def test_a_layout_the_gpu_can_create_is_accepted(vm_size: str, mig_devices: dict[str, int]) -> None:
    parse_config(layout(vm_size, devices(mig_devices)))


@pytest.mark.parametrize(("vm_size", "mig_devices", "why"), [
    (H100, {"1g.10gb": 8}, "8 × 1g.10gb do not fit one H100-SXM5-80GB: it holds at most 7"),
    (H100, {"3g.40gb": 3}, "3 × 3g.40gb do not fit one H100-SXM5-80GB: it holds at most 2"),
    (H100, {"1g.10gb+me": 2}, "2 × 1g.10gb+me do not fit one H100-SXM5-80GB: it holds at most 1"),
    (H100, {"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1},
     "the layout's GPU instances take 8 compute slices and one H100-SXM5-80GB has 7"),
    (H100, {"1g.5gb": 1}, "'1g.5gb' is not a MIG profile of H100-SXM5-80GB: it offers 1g.10gb, 1g.10gb+me"),
    (H100, {"1c.3g.47gb": 1}, "'1c.3g.47gb' is not a MIG profile of H100-SXM5-80GB"),
    (A100_40GB, {"1g.10gb": 5}, "5 × 1g.10gb do not fit one A100-SXM4-40GB: it holds at most 4"),
])
def test_a_layout_past_what_the_gpu_holds_is_refused(vm_size: str, mig_devices: dict[str, int], why: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(layout(vm_size, devices(mig_devices)))
    assert {p.path: p.message for p in caught.value.problems}["pools[0].migConfig"].startswith(f"'custom': {why}")


def test_only_the_layouts_for_the_pools_gpu_are_checked() -> None:
    """A layout filtered to another GPU (an A100 40GB, 0x20B010DE) is not the H100 pool's business."""
    parse_config(layout(H100, devices({"1g.5gb": 7}, **{"device-filter": "0x20B010DE"}),
                        devices({"1g.10gb": 7}, **{"device-filter": "0x233010DE"})))
