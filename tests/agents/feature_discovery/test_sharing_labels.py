"""Sharing labels (`replicas`, `sharing-strategy`, `-SHARED`, `mps.capable`) for time-slicing and MPS configs.

Expected values are derived by hand: a resource replicated N > 1 times shows replicas N, the active strategy
and the -SHARED suffix (unless renamed with renameByDefault); resources that are not replicated show replicas 1
and strategy none; MIG-enabled full GPUs always show replicas 0.
"""

from __future__ import annotations

import pytest

from gpu_operator.agents.feature_discovery import (
    LabelError,
    LabelPolicy,
    MigStrategy,
    node_labels,
    take_snapshot,
)
from gpu_operator.agents.nvml import open_nvml
from gpu_operator.agents.plugin_config import parse_plugin_config

GPU_KEYS = ("nvidia.com/gpu.product", "nvidia.com/gpu.replicas", "nvidia.com/gpu.sharing-strategy")


def labels(profile: str, config: str, strategy: MigStrategy = MigStrategy.NONE) -> dict[str, str]:
    sharing = parse_plugin_config(config).sharing
    snapshot = take_snapshot(open_nvml(f"fake:{profile}"))
    return node_labels(snapshot, LabelPolicy(strategy, sharing), "Virtual Machine", None)


def pick(found: dict[str, str], keys: tuple[str, ...]) -> tuple[str | None, ...]:
    return tuple(found.get(key) for key in keys)


TIME_SLICED_GPU = "sharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 4}]\n"
RENAMED_GPU = (
    "sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources: [{name: nvidia.com/gpu, replicas: 4}]\n"
)
MPS_GPU = "sharing:\n  mps:\n    resources: [{name: nvidia.com/gpu, replicas: 2}]\n"


def test_time_slicing_marks_the_product_shared() -> None:
    found = labels("h100-8x", TIME_SLICED_GPU)
    assert pick(found, GPU_KEYS) == ("NVIDIA-H100-80GB-HBM3-SHARED", "4", "time-slicing")
    assert found["nvidia.com/gpu.count"] == "8"
    assert found["nvidia.com/mps.capable"] == "false"
    assert "nvidia.com/gfd.timestamp" not in found


def test_renamed_resources_keep_the_plain_product_name() -> None:
    assert pick(labels("h100-8x", RENAMED_GPU), GPU_KEYS) == ("NVIDIA-H100-80GB-HBM3", "4", "time-slicing")


def test_mps_sharing() -> None:
    found = labels("h200-8x", MPS_GPU)
    assert pick(found, GPU_KEYS) == ("NVIDIA-H200-SHARED", "2", "mps")
    assert found["nvidia.com/mps.capable"] == "true"


def test_mps_block_present_decides_replication_even_for_time_sliced_resources() -> None:
    config = (
        "sharing:\n"
        "  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 4}]\n"
        "  mps:\n    resources: [{name: nvidia.com/mig-1g.10gb, replicas: 2}]\n"
    )
    found = labels("h100-8x", config)
    assert pick(found, GPU_KEYS) == ("NVIDIA-H100-80GB-HBM3", "1", "none")
    assert found["nvidia.com/mps.capable"] == "true"


def test_mps_on_a_node_with_mig_enabled_is_refused() -> None:
    with pytest.raises(LabelError, match="MPS sharing is not supported for mig devices"):
        labels("a100-8x-mig", MPS_GPU, MigStrategy.SINGLE)


def test_mig_single_devices_are_shared_under_nvidia_com_gpu() -> None:
    found = labels("a100-8x-mig", TIME_SLICED_GPU, MigStrategy.SINGLE)
    assert pick(found, GPU_KEYS) == ("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-SHARED", "4", "time-slicing")
    assert found["nvidia.com/gpu.count"] == "56"


def test_mig_enabled_full_gpus_are_never_shared() -> None:
    found = labels("a100-8x-mig", TIME_SLICED_GPU, MigStrategy.NONE)
    assert pick(found, GPU_KEYS) == ("NVIDIA-A100-SXM4-80GB", "0", "none")


def test_mixed_strategy_shares_one_mig_profile() -> None:
    config = "sharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/mig-1g.10gb, replicas: 3}]\n"
    found = labels("a100-4x-mixed-mig", config, MigStrategy.MIXED)
    one_g = (
        "nvidia.com/mig-1g.10gb.product",
        "nvidia.com/mig-1g.10gb.replicas",
        "nvidia.com/mig-1g.10gb.sharing-strategy",
    )
    two_g = (
        "nvidia.com/mig-2g.20gb.product",
        "nvidia.com/mig-2g.20gb.replicas",
        "nvidia.com/mig-2g.20gb.sharing-strategy",
    )
    assert pick(found, one_g) == ("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-SHARED", "3", "time-slicing")
    assert pick(found, two_g) == ("NVIDIA-A100-SXM4-80GB-MIG-2g.20gb", "1", "none")
    assert pick(found, GPU_KEYS) == ("NVIDIA-A100-SXM4-80GB", "1", "none")


def test_invalid_mig_layout_ignores_sharing() -> None:
    found = labels("a100-4x-mixed-mig", TIME_SLICED_GPU, MigStrategy.SINGLE)
    assert pick(found, GPU_KEYS) == ("NVIDIA-A100-SXM4-80GB-MIG-INVALID", "0", "")
