"""`GetPreferredAllocation`: which of the available devices the kubelet should give a container.

**Whole GPUs without replicas** are chosen by locality. The simulated profiles (and NVML's inventory as the
NVML layer reads it) give each GPU's NVLink count and state but not which peer each link reaches, and on the
DGX/HGX boards they describe every GPU reaches every other through NVSwitch, so NVLink does not tell GPUs
apart; what does is the NUMA node (the CPU socket / PCIe root the GPU hangs off). The choice keeps a request on
as few NUMA nodes as possible: the devices that must be included first, then devices on their NUMA nodes, then
the smallest NUMA node that holds the rest (best fit, so larger groups stay whole for larger requests), in PCI
bus order within a node.

**Replicas** (time-slicing, MPS) are chosen one at a time by how many replicas of each physical GPU are already
in use (the GPU's replicas minus those still available) plus those picked in this request: `distributed`
takes the least-used GPU, `packed` the most-used; ties go to the GPU picked least in this request, then the
lower index. So 4 replicas out of 8 idle GPUs land on 4 different GPUs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from gpu_operator.agents.device_plugin.devices import PluginDevice, Resource
from gpu_operator.agents.device_plugin.settings import AllocationPolicy

__all__ = ["PreferenceError", "preferred_allocation"]


class PreferenceError(ValueError):
    """A preferred-allocation request that cannot be answered (unknown ids, impossible size)."""


def _known(resource: Resource, ids: Sequence[str], what: str) -> list[PluginDevice]:
    unknown = [i for i in ids if resource.device(i) is None]
    if unknown:
        raise PreferenceError(f"{what} of {resource.name!r} names unknown devices: {', '.join(unknown)}")
    return [d for i in dict.fromkeys(ids) if (d := resource.device(i)) is not None]


def _by_locality(chosen: list[PluginDevice], available: list[PluginDevice], size: int) -> list[PluginDevice]:
    rest = [d for d in available if d not in chosen]
    groups: dict[int | None, list[PluginDevice]] = defaultdict(list)
    for device in rest:
        groups[device.numa_node].append(device)
    while len(chosen) < size and groups:
        wanted = size - len(chosen)
        used = {d.numa_node for d in chosen}
        local = [node for node in groups if node in used]
        fitting = [node for node in groups if len(groups[node]) >= wanted]
        if local:
            node = min(local, key=lambda n: (-len(groups[n]), str(n)))
        elif fitting:
            node = min(fitting, key=lambda n: (len(groups[n]), str(n)))
        else:
            node = max(groups, key=lambda n: (len(groups[n]), -min(d.gpu_index for d in groups[n])))
        taken = groups.pop(node)[:wanted]
        chosen += taken
    return chosen


def _by_use(resource: Resource, chosen: list[PluginDevice], available: list[PluginDevice], size: int,
            policy: AllocationPolicy) -> list[PluginDevice]:
    free = Counter(d.uuid for d in available)
    used = Counter({d.uuid: resource.replicas - free[d.uuid] for d in resource.devices})
    picked = Counter(d.uuid for d in chosen)
    sign = 1 if policy is AllocationPolicy.DISTRIBUTED else -1
    rest = [d for d in available if d not in chosen]
    while len(chosen) < size and rest:
        best = min(rest, key=lambda d: (sign * (used[d.uuid] + picked[d.uuid]), picked[d.uuid], d.gpu_index, d.index,
                                        d.replica or 0))
        rest.remove(best)
        chosen.append(best)
        picked[best.uuid] += 1
    return chosen


def preferred_allocation(resource: Resource, available: Sequence[str], must_include: Sequence[str], size: int,
                         policy: AllocationPolicy) -> list[str]:
    """The preferred device ids, `must_include` first. Raises PreferenceError for an unanswerable request."""
    pool = _known(resource, available, "available_deviceIDs")
    chosen = _known(resource, must_include, "must_include_deviceIDs")
    if size < len(chosen) or size > len(set(available) | set(must_include)):
        raise PreferenceError(f"allocation size {size} of {resource.name!r} does not fit {len(chosen)} devices that "
                              f"must be included and {len(pool)} available")
    if resource.replicas > 1:
        result = _by_use(resource, chosen, pool, size, policy)
    else:
        result = _by_locality(chosen, pool, size)
    return [d.id for d in result]
