"""The CPU affinity of each NUMA node in the NCCL topology files, read back the way NCCL reads it.

NCCL v2.29.7 src/include/cpuset.h `ncclStrToCpuset` (called by src/graph/topo.cc `ncclTopoAddCpu` for the
`affinity` attribute): the mask is comma-separated 32-bit hex words, the *first* word the most significant; CPU
`i + 32 * a` is in the set when bit `i` of the `a`-th word from the *end* is set. A file with the words in the other
order still covers every CPU once, so a check of coverage alone misses it; the exact CPUs per node do not.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from gpu_operator.workloads.nccl_topology import nccl_topology


def nccl_cpus(mask: str) -> set[int]:
    """`ncclStrToCpuset`: the words from the last (least significant, CPUs 0-31) to the first."""
    cpus: set[int] = set()
    for word_index, word in enumerate(reversed(mask.split(","))):
        value = int(word, 16)
        cpus |= {bit + 32 * word_index for bit in range(32) if value >> bit & 1}
    return cpus


def affinities(size: str) -> dict[str, str]:
    topology = nccl_topology(size)
    assert topology is not None
    return {cpu.get("numaid", ""): cpu.get("affinity", "") for cpu in ET.fromstring(topology.xml()).findall("cpu")}


@pytest.mark.parametrize("size", ["Standard_ND96isr_H100_v5", "Standard_ND96isr_H200_v5"])
def test_nd_v5_numa_nodes_hold_cpus_0_to_47_and_48_to_95(size: str) -> None:
    """Sapphire Rapids, 96 vCPUs in two NUMA nodes: node 0 is CPUs 0-47 (the low words), node 1 CPUs 48-95."""
    found = affinities(size)
    assert found == {"0": "00000000,0000ffff,ffffffff", "1": "ffffffff,ffff0000,00000000"}
    assert nccl_cpus(found["0"]) == set(range(48))
    assert nccl_cpus(found["1"]) == set(range(48, 96))


@pytest.mark.parametrize("size", ["Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4"])
def test_nd_a100_v4_numa_nodes_hold_24_cpus_each_in_order(size: str) -> None:
    found = affinities(size)
    assert [sorted(nccl_cpus(found[str(node)])) for node in range(4)] == [
        list(range(24 * node, 24 * (node + 1))) for node in range(4)]
    assert found["0"] == "00000000,00000000,00ffffff"


def test_the_reader_follows_nccls_word_order() -> None:
    """A mask whose words were written least significant first reads as other CPUs, which these tests would see."""
    assert nccl_cpus("00000000,0000ffff,ffffffff") != nccl_cpus("ffffffff,0000ffff,00000000")
    assert nccl_cpus("00000001,00000000") == {32}
