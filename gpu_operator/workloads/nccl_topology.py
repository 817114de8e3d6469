"""NCCL topology files for Azure's ND-series VMs, and the ConfigMap a workload mounts them from.

Inside an Azure VM NCCL cannot read the real PCIe tree: every GPU and InfiniBand VF appears on a bus of its own
(`0001:00:00.0`, `0101:00:00.0`, ...) with no switch above it, so NCCL cannot pair each GPU with the NIC behind the
same switch and runs GPUDirect RDMA below line rate. Azure's jobs hand NCCL the real layout instead:
`NCCL_TOPO_FILE=/opt/nvidia-topology/topo.xml`, mounted from a ConfigMap `nvidia-topology` holding the size's file
(Azure/aks-rdma-infiniband tests/scenarios/k8s/templates/mpi-job.yaml; `topo_file_name` in tests/scenarios/util.sh
picks `ndv4-topo.xml` for every ND v4 size and `ndv5-topo.xml` for every ND v5 size).

The files are written here from the sizes' facts, in the XML NCCL reads (NCCL src/graph/topo.cc
`ncclTopoAddPci`: a `cpu` per NUMA node with its CPU affinity mask; under it a `pci` bridge, class `0x060400`,
per PCIe switch; under that the GPUs, class `0x03...`, and NICs, class `0x02...`, by their VM bus id; the link
speed spelled as in `kvDictPciGen`):

* ND H100 v5 / ND H200 v5 (Sapphire Rapids, 2 NUMA nodes of 48 vCPUs, PCIe Gen5): eight switches, each with one
  GPU and the NIC of the same index (GPUs `0001`-`0003`, `0008`-`000c`; NICs `0101`-`0108`);
* ND A100 v4 / NDm A100 v4 (AMD EPYC 7V12, 4 NUMA nodes of 24 vCPUs, PCIe Gen4): four switches, each with two
  GPUs and their two NICs.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from gpu_operator.aks.vm_sizes import vm_size

__all__ = [
    "NcclTopology",
    "TOPOLOGY_CONFIG_MAP",
    "TOPOLOGY_DIRECTORY",
    "TOPOLOGY_FILE",
    "TOPOLOGY_KEY",
    "nccl_topology",
]

#: Where Azure's jobs mount the topology, the ConfigMap key and the file NCCL_TOPO_FILE names.
TOPOLOGY_DIRECTORY = "/opt/nvidia-topology"
TOPOLOGY_KEY = "topo.xml"
TOPOLOGY_FILE = f"{TOPOLOGY_DIRECTORY}/{TOPOLOGY_KEY}"
TOPOLOGY_CONFIG_MAP = "nvidia-topology"

_GPU_CLASS = "0x030200"  # 3D controller
_NIC_CLASS = "0x020700"  # InfiniBand controller
_BRIDGE_CLASS = "0x060400"


@dataclass(frozen=True)
class _Numa:
    """One NUMA node: its vCPUs and the PCIe switches under it, each a tuple of (GPU, NIC, ...) bus ids."""

    first_cpu: int
    cpus: int
    switches: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class NcclTopology:
    """The PCIe layout NCCL needs for one VM family (`name` is the file Azure's jobs use for it)."""

    name: str
    vendor: str
    family_id: int
    model_id: int
    total_cpus: int
    link_speed: str
    numa: tuple[_Numa, ...]

    def _affinity(self, node: _Numa) -> str:
        """The NUMA node's CPUs as a Linux cpumask: 32-bit hex words, most significant first, comma-separated."""
        mask = ((1 << node.cpus) - 1) << node.first_cpu
        words = (self.total_cpus + 31) // 32
        return ",".join(f"{(mask >> (32 * index)) & 0xFFFFFFFF:08x}" for index in reversed(range(words)))

    def xml(self) -> str:
        """The topology file's text."""
        system = ET.Element("system", version="1")
        bridge = 0
        for index, node in enumerate(self.numa):
            cpu = ET.SubElement(system, "cpu", numaid=str(index), affinity=self._affinity(node), arch="x86_64",
                                vendor=self.vendor, familyid=str(self.family_id), modelid=str(self.model_id))
            for devices in node.switches:
                bridge += 1
                switch = ET.SubElement(cpu, "pci", busid=f"ffff:ff:{bridge:02x}.0", class_=_BRIDGE_CLASS,
                                       link_speed=self.link_speed, link_width="16")
                for bus in devices:
                    kind = _NIC_CLASS if bus.startswith("01") else _GPU_CLASS
                    ET.SubElement(switch, "pci", busid=f"{bus}:00:00.0", class_=kind, link_speed=self.link_speed,
                                  link_width="16")
        ET.indent(system)
        return ET.tostring(system, encoding="unicode").replace("class_=", "class=") + "\n"

    def config_map(self, namespace: str) -> dict[str, Any]:
        """The ConfigMap `nvidia-topology` holding the file under `topo.xml`."""
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": TOPOLOGY_CONFIG_MAP, "namespace": namespace,
                         "labels": {"app.kubernetes.io/part-of": "gpu-operator", "nccl-topology": self.name}},
            "data": {TOPOLOGY_KEY: self.xml()},
        }


_NDV5 = NcclTopology(
    name="ndv5-topo.xml", vendor="GenuineIntel", family_id=6, model_id=143, total_cpus=96,
    link_speed="32.0 GT/s PCIe",
    numa=(
        _Numa(0, 48, (("0001", "0101"), ("0002", "0102"), ("0003", "0103"), ("0008", "0104"))),
        _Numa(48, 48, (("0009", "0105"), ("000a", "0106"), ("000b", "0107"), ("000c", "0108"))),
    ),
)
_NDV4 = NcclTopology(
    name="ndv4-topo.xml", vendor="AuthenticAMD", family_id=23, model_id=49, total_cpus=96, link_speed="16 GT/s",
    numa=(
        _Numa(0, 24, (("0003", "0103", "0004", "0104"),)),
        _Numa(24, 24, (("0001", "0101", "0002", "0102"),)),
        _Numa(48, 24, (("000d", "0107", "000e", "0108"),)),
        _Numa(72, 24, (("000b", "0105", "000c", "0106"),)),
    ),
)
#: VM family (as the size catalog names it) -> its topology.
_BY_FAMILY: dict[str, NcclTopology] = {
    "ND H100 v5": _NDV5,
    "ND H200 v5": _NDV5,
    "ND A100 v4": _NDV4,
    "NDm A100 v4": _NDV4,
}


def nccl_topology(vm_size_name: str) -> NcclTopology | None:
    """The topology of a VM size, or None where NCCL's own discovery is right (or the size is unknown)."""
    size = vm_size(vm_size_name)
    return None if size is None else _BY_FAMILY.get(size.family)
