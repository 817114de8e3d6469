"""The complete label set of every simulated node under every MIG strategy.

Each expected set is written out by hand from the rules in reference/agents.md §1 (not produced by the code):
driver "570.124.06" gives major 570, minor 124, rev "06"; CUDA 12080 gives 12.8; memory is total MiB; the
family comes from the compute capability; MIG-enabled GPUs get replicas 0; strategy single overwrites
`nvidia.com/gpu.*` with the one MIG profile, or with the INVALID set; strategy mixed adds one group per profile.
"""

from __future__ import annotations

import pytest

from gpu_operator.agents.feature_discovery import (
    LabelPolicy,
    MigStrategy,
    node_labels,
    take_snapshot,
)
from gpu_operator.agents.nvml import open_nvml

NOW = 1_700_000_000
MACHINE = "PowerEdge XE9680\n"


def labels_of(profile: str, strategy: MigStrategy) -> dict[str, str]:
    snapshot = take_snapshot(open_nvml(f"fake:{profile}"))
    return node_labels(snapshot, LabelPolicy(mig_strategy=strategy), MACHINE, NOW)


COMMON = {
    "nvidia.com/gfd.timestamp": "1700000000",
    "nvidia.com/gpu.machine": "PowerEdge-XE9680",
    "nvidia.com/mps.capable": "false",
    "nvidia.com/gpu.mode": "compute",
    "nvidia.com/vgpu.present": "false",
}

H100 = COMMON | {
    "nvidia.com/cuda.driver.major": "570",
    "nvidia.com/cuda.driver.minor": "124",
    "nvidia.com/cuda.driver.rev": "06",
    "nvidia.com/cuda.driver-version.major": "570",
    "nvidia.com/cuda.driver-version.minor": "124",
    "nvidia.com/cuda.driver-version.revision": "06",
    "nvidia.com/cuda.driver-version.full": "570.124.06",
    "nvidia.com/cuda.runtime.major": "12",
    "nvidia.com/cuda.runtime.minor": "8",
    "nvidia.com/cuda.runtime-version.major": "12",
    "nvidia.com/cuda.runtime-version.minor": "8",
    "nvidia.com/cuda.runtime-version.full": "12.8",
    "nvidia.com/mig.capable": "true",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/gpu.replicas": "1",
    "nvidia.com/gpu.sharing-strategy": "none",
    "nvidia.com/gpu.memory": "81559",
    "nvidia.com/gpu.family": "hopper",
    "nvidia.com/gpu.compute.major": "9",
    "nvidia.com/gpu.compute.minor": "0",
}

H200 = COMMON | {
    "nvidia.com/cuda.driver.major": "580",
    "nvidia.com/cuda.driver.minor": "95",
    "nvidia.com/cuda.driver.rev": "05",
    "nvidia.com/cuda.driver-version.major": "580",
    "nvidia.com/cuda.driver-version.minor": "95",
    "nvidia.com/cuda.driver-version.revision": "05",
    "nvidia.com/cuda.driver-version.full": "580.95.05",
    "nvidia.com/cuda.runtime.major": "13",
    "nvidia.com/cuda.runtime.minor": "0",
    "nvidia.com/cuda.runtime-version.major": "13",
    "nvidia.com/cuda.runtime-version.minor": "0",
    "nvidia.com/cuda.runtime-version.full": "13.0",
    "nvidia.com/mig.capable": "true",
    "nvidia.com/gpu.product": "NVIDIA-H200",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/gpu.replicas": "1",
    "nvidia.com/gpu.sharing-strategy": "none",
    "nvidia.com/gpu.memory": "143771",
    "nvidia.com/gpu.family": "hopper",
    "nvidia.com/gpu.compute.major": "9",
    "nvidia.com/gpu.compute.minor": "0",
}

T4 = COMMON | {
    "nvidia.com/cuda.driver.major": "535",
    "nvidia.com/cuda.driver.minor": "247",
    "nvidia.com/cuda.driver.rev": "01",
    "nvidia.com/cuda.driver-version.major": "535",
    "nvidia.com/cuda.driver-version.minor": "247",
    "nvidia.com/cuda.driver-version.revision": "01",
    "nvidia.com/cuda.driver-version.full": "535.247.01",
    "nvidia.com/cuda.runtime.major": "12",
    "nvidia.com/cuda.runtime.minor": "2",
    "nvidia.com/cuda.runtime-version.major": "12",
    "nvidia.com/cuda.runtime-version.minor": "2",
    "nvidia.com/cuda.runtime-version.full": "12.2",
    "nvidia.com/mig.capable": "false",
    "nvidia.com/gpu.product": "Tesla-T4",
    "nvidia.com/gpu.count": "1",
    "nvidia.com/gpu.replicas": "1",
    "nvidia.com/gpu.sharing-strategy": "none",
    "nvidia.com/gpu.memory": "15360",
    "nvidia.com/gpu.family": "turing",
    "nvidia.com/gpu.compute.major": "7",
    "nvidia.com/gpu.compute.minor": "5",
}

# All eight A100s have MIG enabled: the full-GPU group is labelled without sharing (replicas 0).
A100_MIG = COMMON | {
    "nvidia.com/cuda.driver.major": "550",
    "nvidia.com/cuda.driver.minor": "127",
    "nvidia.com/cuda.driver.rev": "05",
    "nvidia.com/cuda.driver-version.major": "550",
    "nvidia.com/cuda.driver-version.minor": "127",
    "nvidia.com/cuda.driver-version.revision": "05",
    "nvidia.com/cuda.driver-version.full": "550.127.05",
    "nvidia.com/cuda.runtime.major": "12",
    "nvidia.com/cuda.runtime.minor": "4",
    "nvidia.com/cuda.runtime-version.major": "12",
    "nvidia.com/cuda.runtime-version.minor": "4",
    "nvidia.com/cuda.runtime-version.full": "12.4",
    "nvidia.com/mig.capable": "true",
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/gpu.replicas": "0",
    "nvidia.com/gpu.sharing-strategy": "none",
    "nvidia.com/gpu.memory": "81920",
    "nvidia.com/gpu.family": "ampere",
    "nvidia.com/gpu.compute.major": "8",
    "nvidia.com/gpu.compute.minor": "0",
}

# 7 x 1g.10gb per GPU: 56 MIG devices of 9728 MiB, 14 SMs, 1 copy engine, no decoder/encoder/JPEG/OFA.
A100_MIG_SINGLE = A100_MIG | {
    "nvidia.com/mig.strategy": "single",
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
    "nvidia.com/gpu.count": "56",
    "nvidia.com/gpu.replicas": "1",
    "nvidia.com/gpu.sharing-strategy": "none",
    "nvidia.com/gpu.memory": "9728",
    "nvidia.com/gpu.multiprocessors": "14",
    "nvidia.com/gpu.slices.gi": "1",
    "nvidia.com/gpu.slices.ci": "1",
    "nvidia.com/gpu.engines.copy": "1",
    "nvidia.com/gpu.engines.decoder": "0",
    "nvidia.com/gpu.engines.encoder": "0",
    "nvidia.com/gpu.engines.jpeg": "0",
    "nvidia.com/gpu.engines.ofa": "0",
}

A100_MIG_MIXED = A100_MIG | {
    "nvidia.com/mig.strategy": "mixed",
    "nvidia.com/mig-1g.10gb.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
    "nvidia.com/mig-1g.10gb.count": "56",
    "nvidia.com/mig-1g.10gb.replicas": "1",
    "nvidia.com/mig-1g.10gb.sharing-strategy": "none",
    "nvidia.com/mig-1g.10gb.memory": "9728",
    "nvidia.com/mig-1g.10gb.multiprocessors": "14",
    "nvidia.com/mig-1g.10gb.slices.gi": "1",
    "nvidia.com/mig-1g.10gb.slices.ci": "1",
    "nvidia.com/mig-1g.10gb.engines.copy": "1",
    "nvidia.com/mig-1g.10gb.engines.decoder": "0",
    "nvidia.com/mig-1g.10gb.engines.encoder": "0",
    "nvidia.com/mig-1g.10gb.engines.jpeg": "0",
    "nvidia.com/mig-1g.10gb.engines.ofa": "0",
}

# The h100-8x node with MIG on: the full-GPU group is labelled without sharing (replicas 0).
H100_MIG = H100 | {"nvidia.com/gpu.replicas": "0"}

# 7 x 1g.10gb per GPU: 56 MIG devices of 9984 MiB, 16 SMs, 1 copy engine, 1 decoder, 1 JPEG, no encoder, no OFA
# (Hopper's 1g slice has a decoder and a JPEG engine, unlike Ampere's).
H100_MIG_SINGLE = H100_MIG | {
    "nvidia.com/mig.strategy": "single",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
    "nvidia.com/gpu.count": "56",
    "nvidia.com/gpu.replicas": "1",
    "nvidia.com/gpu.sharing-strategy": "none",
    "nvidia.com/gpu.memory": "9984",
    "nvidia.com/gpu.multiprocessors": "16",
    "nvidia.com/gpu.slices.gi": "1",
    "nvidia.com/gpu.slices.ci": "1",
    "nvidia.com/gpu.engines.copy": "1",
    "nvidia.com/gpu.engines.decoder": "1",
    "nvidia.com/gpu.engines.encoder": "0",
    "nvidia.com/gpu.engines.jpeg": "1",
    "nvidia.com/gpu.engines.ofa": "0",
}

H100_MIG_MIXED = H100_MIG | {
    "nvidia.com/mig.strategy": "mixed",
    "nvidia.com/mig-1g.10gb.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
    "nvidia.com/mig-1g.10gb.count": "56",
    "nvidia.com/mig-1g.10gb.replicas": "1",
    "nvidia.com/mig-1g.10gb.sharing-strategy": "none",
    "nvidia.com/mig-1g.10gb.memory": "9984",
    "nvidia.com/mig-1g.10gb.multiprocessors": "16",
    "nvidia.com/mig-1g.10gb.slices.gi": "1",
    "nvidia.com/mig-1g.10gb.slices.ci": "1",
    "nvidia.com/mig-1g.10gb.engines.copy": "1",
    "nvidia.com/mig-1g.10gb.engines.decoder": "1",
    "nvidia.com/mig-1g.10gb.engines.encoder": "0",
    "nvidia.com/mig-1g.10gb.engines.jpeg": "1",
    "nvidia.com/mig-1g.10gb.engines.ofa": "0",
}

# Two MIG-enabled and two MIG-disabled A100s of the same name: count 4, and the MIG-disabled group (labelled
# last, with sharing) decides replicas = 1.
MIXED_NODE = COMMON | {
    "nvidia.com/cuda.driver.major": "570",
    "nvidia.com/cuda.driver.minor": "86",
    "nvidia.com/cuda.driver.rev": "15",
    "nvidia.com/cuda.driver-version.major": "570",
    "nvidia.com/cuda.driver-version.minor": "86",
    "nvidia.com/cuda.driver-version.revision": "15",
    "nvidia.com/cuda.driver-version.full": "570.86.15",
    "nvidia.com/cuda.runtime.major": "12",
    "nvidia.com/cuda.runtime.minor": "8",
    "nvidia.com/cuda.runtime-version.major": "12",
    "nvidia.com/cuda.runtime-version.minor": "8",
    "nvidia.com/cuda.runtime-version.full": "12.8",
    "nvidia.com/mig.capable": "true",
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
    "nvidia.com/gpu.count": "4",
    "nvidia.com/gpu.replicas": "1",
    "nvidia.com/gpu.sharing-strategy": "none",
    "nvidia.com/gpu.memory": "81920",
    "nvidia.com/gpu.family": "ampere",
    "nvidia.com/gpu.compute.major": "8",
    "nvidia.com/gpu.compute.minor": "0",
}

# single cannot expose MIG-enabled and MIG-disabled GPUs together: the INVALID set.
MIXED_NODE_SINGLE = MIXED_NODE | {
    "nvidia.com/mig.strategy": "single",
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-INVALID",
    "nvidia.com/gpu.count": "0",
    "nvidia.com/gpu.replicas": "0",
    "nvidia.com/gpu.memory": "0",
    "nvidia.com/gpu.sharing-strategy": "",
}

# GPU 0: 7 x 1g.10gb; GPU 1: 3g.40gb + 2g.20gb + 2 x 1g.10gb -> 1g.10gb x 9, 2g.20gb x 1, 3g.40gb x 1.
MIXED_NODE_MIXED = MIXED_NODE | {
    "nvidia.com/mig.strategy": "mixed",
    "nvidia.com/mig-1g.10gb.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
    "nvidia.com/mig-1g.10gb.count": "9",
    "nvidia.com/mig-1g.10gb.replicas": "1",
    "nvidia.com/mig-1g.10gb.sharing-strategy": "none",
    "nvidia.com/mig-1g.10gb.memory": "9728",
    "nvidia.com/mig-1g.10gb.multiprocessors": "14",
    "nvidia.com/mig-1g.10gb.slices.gi": "1",
    "nvidia.com/mig-1g.10gb.slices.ci": "1",
    "nvidia.com/mig-1g.10gb.engines.copy": "1",
    "nvidia.com/mig-1g.10gb.engines.decoder": "0",
    "nvidia.com/mig-1g.10gb.engines.encoder": "0",
    "nvidia.com/mig-1g.10gb.engines.jpeg": "0",
    "nvidia.com/mig-1g.10gb.engines.ofa": "0",
    "nvidia.com/mig-2g.20gb.product": "NVIDIA-A100-SXM4-80GB-MIG-2g.20gb",
    "nvidia.com/mig-2g.20gb.count": "1",
    "nvidia.com/mig-2g.20gb.replicas": "1",
    "nvidia.com/mig-2g.20gb.sharing-strategy": "none",
    "nvidia.com/mig-2g.20gb.memory": "19968",
    "nvidia.com/mig-2g.20gb.multiprocessors": "28",
    "nvidia.com/mig-2g.20gb.slices.gi": "2",
    "nvidia.com/mig-2g.20gb.slices.ci": "2",
    "nvidia.com/mig-2g.20gb.engines.copy": "2",
    "nvidia.com/mig-2g.20gb.engines.decoder": "1",
    "nvidia.com/mig-2g.20gb.engines.encoder": "0",
    "nvidia.com/mig-2g.20gb.engines.jpeg": "0",
    "nvidia.com/mig-2g.20gb.engines.ofa": "0",
    "nvidia.com/mig-3g.40gb.product": "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb",
    "nvidia.com/mig-3g.40gb.count": "1",
    "nvidia.com/mig-3g.40gb.replicas": "1",
    "nvidia.com/mig-3g.40gb.sharing-strategy": "none",
    "nvidia.com/mig-3g.40gb.memory": "40192",
    "nvidia.com/mig-3g.40gb.multiprocessors": "42",
    "nvidia.com/mig-3g.40gb.slices.gi": "3",
    "nvidia.com/mig-3g.40gb.slices.ci": "3",
    "nvidia.com/mig-3g.40gb.engines.copy": "3",
    "nvidia.com/mig-3g.40gb.engines.decoder": "2",
    "nvidia.com/mig-3g.40gb.engines.encoder": "0",
    "nvidia.com/mig-3g.40gb.engines.jpeg": "0",
    "nvidia.com/mig-3g.40gb.engines.ofa": "0",
}

# Without MIG-enabled GPUs single and mixed only add the strategy label.
EXPECTED = {
    ("h100-8x", MigStrategy.NONE): H100,
    ("h100-8x", MigStrategy.SINGLE): H100 | {"nvidia.com/mig.strategy": "single"},
    ("h100-8x", MigStrategy.MIXED): H100 | {"nvidia.com/mig.strategy": "mixed"},
    ("h100-8x-mig", MigStrategy.NONE): H100_MIG,
    ("h100-8x-mig", MigStrategy.SINGLE): H100_MIG_SINGLE,
    ("h100-8x-mig", MigStrategy.MIXED): H100_MIG_MIXED,
    ("h200-8x", MigStrategy.NONE): H200,
    ("h200-8x", MigStrategy.SINGLE): H200 | {"nvidia.com/mig.strategy": "single"},
    ("h200-8x", MigStrategy.MIXED): H200 | {"nvidia.com/mig.strategy": "mixed"},
    ("t4-1x", MigStrategy.NONE): T4,
    ("t4-1x", MigStrategy.SINGLE): T4 | {"nvidia.com/mig.strategy": "single"},
    ("t4-1x", MigStrategy.MIXED): T4 | {"nvidia.com/mig.strategy": "mixed"},
    ("a100-8x-mig", MigStrategy.NONE): A100_MIG,
    ("a100-8x-mig", MigStrategy.SINGLE): A100_MIG_SINGLE,
    ("a100-8x-mig", MigStrategy.MIXED): A100_MIG_MIXED,
    ("a100-4x-mixed-mig", MigStrategy.NONE): MIXED_NODE,
    ("a100-4x-mixed-mig", MigStrategy.SINGLE): MIXED_NODE_SINGLE,
    ("a100-4x-mixed-mig", MigStrategy.MIXED): MIXED_NODE_MIXED,
}


@pytest.mark.parametrize(("profile", "strategy"), list(EXPECTED), ids=lambda v: getattr(v, "value", v))
def test_complete_label_set(profile: str, strategy: MigStrategy) -> None:
    assert labels_of(profile, strategy) == EXPECTED[(profile, strategy)]


def test_every_shipped_profile_is_covered() -> None:
    from gpu_operator.agents.nvml.simulated import profile_names

    assert {profile for profile, _ in EXPECTED} == set(profile_names())
