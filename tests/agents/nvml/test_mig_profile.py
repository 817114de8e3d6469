"""MIG profile names, checked against names NVIDIA's tools print for real GPUs.

Expected names are worked out by hand from the rule: share = MIG MiB / total MiB rounded up to eighths,
GB = round(share * ceil(total GiB)).
"""

from __future__ import annotations

import pynvml
import pytest

from gpu_operator.agents.nvml.errors import NvmlNotSupported
from gpu_operator.agents.nvml.mig_profile import (
    COMPUTE_INSTANCE_SLICES,
    GPU_INSTANCE_SLICES,
    mig_memory_gb,
    mig_profile_name,
    resource_profile_name,
)

MIB = 1 << 20
A100_80GB = 81920 * MIB
H100_80GB = 81559 * MIB
H200_141GB = 143771 * MIB
ONE_SLICE, TWO_SLICE, THREE_SLICE = (
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE,
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE,
    pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE,
)
CI_ONE, CI_TWO, CI_THREE = (
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
)


@pytest.mark.parametrize(
    ("gi", "ci", "mig_mib", "total", "name"),
    [
        # 9728/81920 = 0.119 -> 1/8 of 80 GiB = 10
        (ONE_SLICE, CI_ONE, 9728, A100_80GB, "1g.10gb"),
        # 19968/81920 = 0.244 -> 2/8 of 80 = 20
        (TWO_SLICE, CI_TWO, 19968, A100_80GB, "2g.20gb"),
        (THREE_SLICE, CI_THREE, 40192, A100_80GB, "3g.40gb"),
        # 16384/143771 = 0.114 -> 1/8 of 141 = 17.6 -> 18
        (ONE_SLICE, CI_ONE, 16384, H200_141GB, "1g.18gb"),
        # 71168/143771 = 0.495 -> 4/8 of 141 = 70.5 -> 71 (half rounds away from zero, as in Go)
        (THREE_SLICE, CI_THREE, 71168, H200_141GB, "3g.71gb"),
        # 33024/143771 = 0.2297 -> 2/8 of 141 = 35.25 -> 35; REV2 index has no suffix
        (pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, CI_ONE, 33024, H200_141GB, "1g.35gb"),
        # compute instance smaller than its GPU instance: C is written out
        (TWO_SLICE, CI_ONE, 19968, A100_80GB, "1c.2g.20gb"),
        # 9984/81559 = 0.122 -> 1/8 of ceil(79.6) = 80 -> 10, media extensions
        (pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, CI_ONE, 9984, H100_80GB, "1g.10gb+me"),
        (pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, CI_ONE, 9984, H100_80GB, "1g.10gb+me.all"),
        (pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, CI_ONE, 9984, H100_80GB, "1g.10gb-me"),
        (pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX, CI_ONE, 9984, H100_80GB, "1g.10gb+gfx"),
        # the NVL compute instance profile of a whole GPU instance (GB200 NVL racks): 7 slices
        (pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL, 81920, A100_80GB,
         "7g.80gb"),
    ],
)
def test_profile_name(gi: int, ci: int, mig_mib: int, total: int, name: str) -> None:
    assert mig_profile_name(gi, ci, mig_mib, total) == name


def test_gb_rounds_the_share_up_to_eighths_before_scaling() -> None:
    # 1 MiB of 80 GiB is 1/8 after rounding up: 10 GB, not 0
    assert mig_memory_gb(1, A100_80GB) == 10
    assert mig_memory_gb(81920, A100_80GB) == 80


def test_unknown_profile_index_is_refused_as_an_nvml_error() -> None:
    # An index a newer driver defines and our table lacks must stay inside NVML error handling, never a KeyError.
    with pytest.raises(NvmlNotSupported) as raised:
        mig_profile_name(0x40, CI_ONE, 9728, A100_80GB)
    assert not isinstance(raised.value, KeyError)
    with pytest.raises(NvmlNotSupported):
        mig_profile_name(ONE_SLICE, 0x40, 9728, A100_80GB)


def test_every_profile_index_pynvml_defines_is_in_the_tables() -> None:
    for prefix, table, count in (
        ("NVML_GPU_INSTANCE_PROFILE_", GPU_INSTANCE_SLICES, pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT),
        ("NVML_COMPUTE_INSTANCE_PROFILE_", COMPUTE_INSTANCE_SLICES, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT),
    ):
        defined = {
            value for name, value in vars(pynvml).items()
            if name.startswith(prefix) and "SLICE" in name and isinstance(value, int)
        }
        assert defined == set(range(count))
        assert defined <= set(table), sorted(defined - set(table))


def test_resource_names_use_dots() -> None:
    assert resource_profile_name("1g.10gb+me") == "1g.10gb.me"
    assert resource_profile_name("1g.24gb+me.all") == "1g.24gb.me.all"
    assert resource_profile_name("3g.40gb") == "3g.40gb"
