"""Preferred allocation: NUMA locality for whole GPUs, even spread (or packing) for replicas."""

from __future__ import annotations

import pytest

from gpu_operator.agents.device_plugin.devices import Resource, build_resources
from gpu_operator.agents.device_plugin.preferred import PreferenceError, preferred_allocation
from gpu_operator.agents.device_plugin.settings import AllocationPolicy, Settings
from gpu_operator.agents.nvml import open_nvml
from gpu_operator.agents.plugin_config import parse_plugin_config

DISTRIBUTED, PACKED = AllocationPolicy.DISTRIBUTED, AllocationPolicy.PACKED


def _resource(replicas: int = 1) -> Resource:
    text = "version: v1"
    if replicas > 1:
        text += f"\nsharing:\n  timeSlicing:\n    resources:\n      - {{name: gpu, replicas: {replicas}}}\n"
    nvml = open_nvml("fake:h100-8x")
    try:
        return build_resources(nvml.devices(), Settings(plugin_config=parse_plugin_config(text)))[0]
    finally:
        nvml.close()


def test_whole_gpus_fill_the_smallest_numa_node_that_fits() -> None:
    resource = _resource()
    ids = [d.id for d in resource.devices]
    numa = {d.id: d.numa_node for d in resource.devices}
    chosen = preferred_allocation(resource, ids, [], 4, DISTRIBUTED)
    assert len({numa[i] for i in chosen}) == 1
    # the node's first NUMA node is partly used: two GPUs go to the other, which still holds them
    first = [i for i in ids if numa[i] == numa[ids[0]]]
    rest = [i for i in ids if i not in first[:3]]
    chosen = preferred_allocation(resource, rest, [], 2, DISTRIBUTED)
    assert len({numa[i] for i in chosen}) == 1


def test_replicas_spread_evenly_across_gpus() -> None:
    resource = _resource(4)
    ids = [d.id for d in resource.devices]
    chosen = preferred_allocation(resource, ids, [], 8, DISTRIBUTED)
    assert sorted({i.split("::")[0] for i in chosen}) == sorted({d.uuid for d in resource.devices})
    chosen = preferred_allocation(resource, ids, [], 16, DISTRIBUTED)
    per_gpu = {u: sum(i.startswith(u) for i in chosen) for u in {d.uuid for d in resource.devices}}
    assert set(per_gpu.values()) == {2}


def test_packed_fills_the_busiest_gpu_first() -> None:
    resource = _resource(4)
    ids = [d.id for d in resource.devices]
    busy = resource.devices[8].uuid  # GPU 2: one of its four replicas in use
    available = [i for i in ids if i != f"{busy}::0"]
    assert {i.split("::")[0] for i in preferred_allocation(resource, available, [], 3, PACKED)} == {busy}
    assert busy not in {i.split("::")[0] for i in preferred_allocation(resource, available, [], 3, DISTRIBUTED)}


def test_impossible_sizes_and_unknown_ids_are_refused() -> None:
    resource = _resource()
    ids = [d.id for d in resource.devices]
    with pytest.raises(PreferenceError, match="names unknown devices: GPU-x"):
        preferred_allocation(resource, ["GPU-x"], [], 1, DISTRIBUTED)
    with pytest.raises(PreferenceError, match="allocation size 9"):
        preferred_allocation(resource, ids, [], 9, DISTRIBUTED)
