"""What NVIDIA's DRA driver publishes, as data: drivers, DeviceClasses, device attributes and capacities.

Facts of kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 (chart 0.4.1, `kubeVersion >= 1.32`), read from its
source: the DeviceClass templates of the chart and the kubelet plugins' device announcements
(`cmd/gpu-kubelet-plugin/deviceinfo.go`, `mig.go`, `cmd/compute-domain-kubelet-plugin/deviceinfo.go`).

Two DRA drivers run in one kubelet-plugin pod: `gpu.nvidia.com` publishes full GPUs (`type: gpu`), MIG devices
(`type: mig`) and GPUs bound to vfio-pci (`type: vfio`); `compute-domain.nvidia.com` publishes a ComputeDomain's
IMEX daemon (`type: daemon`) and channels (`type: channel`). A CEL selector reads an attribute through its
domain, `device.attributes['gpu.nvidia.com'].productName`, and the standard PCI attributes through theirs,
`device.attributes['resource.kubernetes.io'].pcieRoot`. Version attributes are semantic versions (compare with
`semver('580.0.0')`), `memory` is a quantity in bytes (compare with `quantity('80Gi')`). The attributes `index`
and `minor` are gone since driver v25.8: select by `uuid` or `resource.kubernetes.io/pciBusID` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal
from collections.abc import Mapping

__all__ = [
    "AttributeType",
    "CHART",
    "COMPUTE_DOMAIN_DRIVER",
    "DEVICE_CLASSES",
    "DeviceClassFacts",
    "DeviceKind",
    "DeviceFacts",
    "DEVICES",
    "DRA_NODE_LABEL",
    "DraChartFacts",
    "GPU_DRIVER",
    "MIN_COMPUTE_DOMAIN_DRIVER",
    "MIN_DRIVER_BRANCH",
    "MIN_KUBERNETES",
    "REMOVED_ATTRIBUTES",
    "STANDARD_DOMAIN",
    "attribute_domains",
    "device_class",
]

GPU_DRIVER = "gpu.nvidia.com"
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
#: The domain of Kubernetes' standard device attributes (k8s.io/dynamic-resource-allocation/deviceattribute).
STANDARD_DOMAIN = "resource.kubernetes.io"
#: Nodes whose kubelet plugin runs: the chart's `kubeletPlugin.nodeSelector`, and what the driver manager is told
#: marks nodes whose GPU pods hold DRA claims (`NODE_LABEL_FOR_GPU_POD_EVICTION`).
DRA_NODE_LABEL = "nvidia.com/dra-kubelet-plugin"
#: The driver's prerequisites (docs/prerequisites.md): Kubernetes 1.34.2 or later (`resource.k8s.io/v1` is
#: served from 1.34; the driver asks for the 1.34.2 patch release).
MIN_KUBERNETES = (1, 34, 2)
#: GPU allocation needs an NVIDIA driver of the R565 branch or later (docs/prerequisites.md).
MIN_DRIVER_BRANCH = 565
#: ComputeDomains need driver 570.158.01 or later: the compute-domain kubelet plugin's IMEXDaemonsWithDNSNames
#: feature, on by default, refuses older drivers (cmd/compute-domain-kubelet-plugin/main.go,
#: IMEXDaemonsWithDNSNamesMinDriverVersion).
MIN_COMPUTE_DOMAIN_DRIVER = (570, 158, 1)


@dataclass(frozen=True)
class DraChartFacts:
    """The driver's Helm chart: where it is published, the pinned version, and its namespace rule."""

    repository: str
    name: str
    version: str
    image: str


CHART = DraChartFacts(
    repository="oci://registry.k8s.io/dra-driver-nvidia/charts",
    name="dra-driver-nvidia-gpu",
    version="0.4.1",
    image="registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1",
)

AttributeType = Literal["string", "version", "int", "bool"]
DeviceKind = Literal["gpu", "mig", "vfio", "daemon", "channel"]


@dataclass(frozen=True)
class DeviceFacts:
    """One kind of device a driver publishes: its attributes (qualified name -> type) and capacities."""

    driver: str
    kind: DeviceKind
    attributes: Mapping[str, AttributeType]
    capacities: tuple[str, ...]
    #: Capacities named by a pattern (MIG memory slices: memorySlice0, memorySlice1, ...).
    capacity_prefixes: tuple[str, ...] = ()

    def qualified(self, name: str) -> str:
        """`productName` -> `gpu.nvidia.com/productName`; qualified names stay as they are."""
        return name if "/" in name else f"{self.driver}/{name}"

    def has_attribute(self, qualified: str) -> bool:
        return qualified in {self.qualified(name) for name in self.attributes}

    def has_capacity(self, qualified: str) -> bool:
        domain, _, name = qualified.rpartition("/")
        return domain == self.driver and (name in self.capacities or any(
            name.startswith(prefix) and name[len(prefix):].isdigit() for prefix in self.capacity_prefixes))


_PCI: Mapping[str, AttributeType] = {
    f"{STANDARD_DOMAIN}/pciBusID": "string",
    f"{STANDARD_DOMAIN}/pcieRoot": "string",
}
_GPU_COMMON: Mapping[str, AttributeType] = {
    "type": "string",
    "uuid": "string",
    "productName": "string",
    "brand": "string",
    "architecture": "string",
    "cudaComputeCapability": "version",
    "driverVersion": "version",
    "cudaDriverVersion": "version",
    # only on coherent-memory systems (HMM, ATS, None)
    "addressingMode": "string",
    **_PCI,
}

#: Every kind of device the two drivers publish.
DEVICES: Mapping[DeviceKind, DeviceFacts] = MappingProxyType({
    "gpu": DeviceFacts(GPU_DRIVER, "gpu", MappingProxyType(dict(_GPU_COMMON)), ("memory",)),
    "mig": DeviceFacts(
        GPU_DRIVER, "mig", MappingProxyType({**_GPU_COMMON, "parentUUID": "string", "profile": "string"}),
        ("multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines", "memory"),
        capacity_prefixes=("memorySlice",),
    ),
    "vfio": DeviceFacts(
        GPU_DRIVER, "vfio",
        MappingProxyType({"type": "string", "uuid": "string", "deviceID": "string", "vendorID": "string",
                          "numa": "int", "productName": "string", "iommuFDEnabled": "bool", **_PCI}),
        ("addressableMemory",),
    ),
    "daemon": DeviceFacts(COMPUTE_DOMAIN_DRIVER, "daemon", MappingProxyType({"type": "string", "id": "int"}), ()),
    "channel": DeviceFacts(COMPUTE_DOMAIN_DRIVER, "channel", MappingProxyType({"type": "string", "id": "int"}), ()),
})

#: Attributes older drivers published that v25.8 and later do not: name -> what to select by instead.
REMOVED_ATTRIBUTES: Mapping[str, str] = MappingProxyType({
    "index": "uuid or resource.kubernetes.io/pciBusID",
    "minor": "uuid or resource.kubernetes.io/pciBusID",
})


@dataclass(frozen=True)
class DeviceClassFacts:
    """A DeviceClass the chart creates: its name, the devices it selects, and whether `resources.gpus` or
    `resources.computeDomains` switches it."""

    name: str
    devices: DeviceKind
    resources: Literal["gpus", "computeDomains"]
    expression: str
    extended_resource_name: str | None = None

    @property
    def facts(self) -> DeviceFacts:
        return DEVICES[self.devices]


def _selects(driver: str, kind: str, extra: str = "") -> str:
    return f"device.driver == '{driver}' && device.attributes['{driver}'].type == '{kind}'{extra}"


#: The chart's DeviceClasses (templates/deviceclass-*.yaml), in the chart's order.
DEVICE_CLASSES: tuple[DeviceClassFacts, ...] = (
    DeviceClassFacts("gpu.nvidia.com", "gpu", "gpus", _selects(GPU_DRIVER, "gpu"), "nvidia.com/gpu"),
    DeviceClassFacts("mig.nvidia.com", "mig", "gpus", _selects(GPU_DRIVER, "mig")),
    DeviceClassFacts("vfio.gpu.nvidia.com", "vfio", "gpus", _selects(GPU_DRIVER, "vfio")),
    DeviceClassFacts("compute-domain-daemon.nvidia.com", "daemon", "computeDomains",
                     _selects(COMPUTE_DOMAIN_DRIVER, "daemon")),
    DeviceClassFacts("compute-domain-default-channel.nvidia.com", "channel", "computeDomains",
                     _selects(COMPUTE_DOMAIN_DRIVER, "channel",
                              f" && device.attributes['{COMPUTE_DOMAIN_DRIVER}'].id == 0")),
)


def device_class(name: str) -> DeviceClassFacts | None:
    """The chart's DeviceClass called `name`, or None."""
    return next((cls for cls in DEVICE_CLASSES if cls.name == name), None)


def attribute_domains(facts: DeviceFacts) -> dict[str, set[str]]:
    """Domain -> attribute names, as CEL reaches them (`device.attributes[domain].name`)."""
    domains: dict[str, set[str]] = {}
    for name in facts.attributes:
        domain, _, short = facts.qualified(name).rpartition("/")
        domains.setdefault(domain, set()).add(short)
    return domains

