"""The `network` section: NVIDIA's Network Operator and the RDMA wiring of InfiniBand GPU pools.

```yaml
network:
  enabled: true                 # default: on when a pool's VM size has InfiniBand
  chartVersion: 26.4.1          # the network-operator Helm chart (helm.ngc.nvidia.com/nvidia)
  chart: {}                     # where Helm gets it: {repository: https://...}, {oci: oci://...} or {path: ...}
  namespace: network-operator
  mofed: operator               # operator: the DOCA-OFED driver container; host: the node image brings MOFED
  ofedDriver: {version: ..., upgradePolicy: {...}, env: [...], ...}
  devicePlugins: [sriov]        # sriov (rdma/ib, one unit per VF) and/or shared (rdma/shared_ib)
  sriovDevicePlugin: {resourcePrefix: rdma, resourceName: ib}
  rdmaSharedDevicePlugin: {resourcePrefix: rdma, resourceName: shared_ib, rdmaHcaMax: 63}
  ipoib: {master: ibP257p0s0, ipPool: {subnet: 192.168.0.0/16, perNodeBlockSize: 256}}
  docaTelemetry: false
  vfDeviceIds: []               # default: the IB virtual-function PCI ids of the pools' NIC generations
  waitForMofed: false           # true: `pulumi up` waits for mofed.wait=false on every IB node before the GPU operator
```

The device-plugin configs are modelled with the keys the plugins' own schemas accept, so a config that would be
refused by the Network Operator's admission webhook is refused here, naming the key. Resource names are what
pods request (`<resourcePrefix>/<resourceName>`): the SR-IOV plugin accepts only letters, digits and `_` in the
name, and the prefix must be a DNS subdomain, as Kubernetes requires of an extended-resource name.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from gpu_operator.config.base import ConfigModel, Int32
from gpu_operator.config.chart_source import ChartSource, PublishedChart, check_chart_version
from gpu_operator.config.kube import DnsLabel, PodSelector, Quantity, check_env_name, distinct_env_names
from gpu_operator.config.pools import GpuPool

__all__ = [
    "CHART_VALUE_KEYS",
    "CHART_VERSION",
    "DEFAULT_BLACKLIST_MODULES_FILE",
    "DevicePluginKind",
    "DrainSpec",
    "IpPoolSpec",
    "IpoibSpec",
    "NETWORK_CHART",
    "NetworkImage",
    "NetworkSpec",
    "OfedDriverSpec",
    "OfedProbe",
    "RdmaSharedPluginSpec",
    "RdmaSelectors",
    "SriovPluginSpec",
    "UpgradePolicy",
    "WaitForCompletion",
    "network_wanted",
    "pool_vf_device_ids",
]

#: The network-operator chart this package's defaults (images, values) were taken from.
CHART_VERSION = "26.4.1"
#: NVIDIA's network-operator chart in its NGC Helm repository.
NETWORK_CHART = PublishedChart("network-operator", CHART_VERSION, "https://helm.ngc.nvidia.com/nvidia")
#: Component image tag of the chart's release.
COMPONENT_VERSION = "network-operator-v26.4.1"
MELLANOX_REPOSITORY = "nvcr.io/nvidia/mellanox"
#: Azure's workaround (Mellanox/doca-driver-build#52): modules `openibd restart` must not reload on Azure VMs.
DEFAULT_BLACKLIST_MODULES_FILE = "/host/etc/modprobe.d/blacklist-ofed-modules.conf"

DevicePluginKind = Literal["sriov", "shared"]

#: Top-level keys of the network-operator 26.4 chart's values file; `network.values` may set only these.
CHART_VALUE_KEYS = frozenset({
    "nfd", "upgradeCRDs", "sriovNetworkOperator", "maintenanceOperator", "node-feature-discovery",
    "sriov-network-operator", "maintenance-operator-chart", "operator", "imagePullSecrets", "test",
})

_RESOURCE_NAME = re.compile(r"^[A-Za-z0-9_]+\Z")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_PCI_DEVICE = re.compile(r"^[0-9a-f]{4}\Z")


def check_resource_name(value: str) -> str:
    """A device-plugin resource name: letters, digits and `_` (no `-`, no `/`)."""
    if not _RESOURCE_NAME.match(value):
        raise ValueError(
            f"{value!r} is not a device-plugin resource name: use letters, digits and '_' only (e.g. 'ib', "
            "'shared_ib'); the prefix goes in resourcePrefix"
        )
    return value


def check_resource_prefix(value: str) -> str:
    if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise ValueError(f"{value!r} is not a resource prefix: use a DNS subdomain such as 'rdma' or 'nvidia.com'")
    return value


def check_pci_device_ids(values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        if not _PCI_DEVICE.match(value):
            raise ValueError(f"{value!r} is not a PCI device id such as '101e' (4 lower-case hex digits)")
    if len(set(values)) != len(values):
        raise ValueError("a device id is listed twice")
    return values


class NetworkImage(ConfigModel):
    """A component image as the NicClusterPolicy names it: `<repository>/<image>:<version>`."""

    repository: str = Field(min_length=1)
    image: str = Field(min_length=1)
    version: str = Field(min_length=1)

    def to_spec(self) -> dict[str, Any]:
        return {"repository": self.repository, "image": self.image, "version": self.version}


def _mellanox(image: str) -> NetworkImage:
    return NetworkImage(repository=MELLANOX_REPOSITORY, image=image, version=COMPONENT_VERSION)


class OfedProbe(ConfigModel):
    """A probe of the MOFED container (the operator fills in its command)."""

    initial_delay_seconds: Int32 = Field(ge=0)
    period_seconds: Int32 = Field(ge=1)


class DrainSpec(ConfigModel):
    """How a node is drained before its MOFED driver is upgraded."""

    enable: bool = True
    force: bool = True
    delete_empty_dir: bool = True
    timeout_seconds: int = Field(default=300, ge=0)
    pod_selector: PodSelector | None = None


class WaitForCompletion(ConfigModel):
    """Pods (by label selector) whose completion an upgrade waits for; 0 s waits forever."""

    pod_selector: PodSelector = Field(min_length=1)
    timeout_seconds: int = Field(default=0, ge=0)


class UpgradePolicy(ConfigModel):
    """The MOFED driver's upgrade policy (the operator's upgrade controller)."""

    auto_upgrade: bool = True
    max_parallel_upgrades: int = Field(default=1, ge=0, description="nodes upgraded at once; 0 = all")
    safe_load: bool = False
    drain: DrainSpec = DrainSpec()
    wait_for_completion: WaitForCompletion | None = None

    @model_validator(mode="after")
    def _safe_load_needs_auto_upgrade(self) -> Self:
        if self.safe_load and not self.auto_upgrade:
            raise ValueError("safeLoad only works with autoUpgrade: set autoUpgrade: true or safeLoad: false")
        return self


class EnvVar(ConfigModel):
    name: str
    value: str

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_env_name(value)


class ContainerResources(ConfigModel):
    """The driver container's requests and limits, quantities as in `operator.*.resources`."""

    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}


class OfedDriverSpec(ConfigModel):
    """The DOCA-OFED driver container (`ofedDriver`; the `doca-driver` image, compiled on the node).

    Defaults are Azure's: automatic upgrades one node at a time with a forced drain, probes that give the
    compile time it needs, and the Azure module blacklist so `openibd restart` does not take the node's
    network down. The requests are sized for compiling the driver (it OOMs below about 1 GiB).
    """

    image: NetworkImage = NetworkImage(
        repository=MELLANOX_REPOSITORY, image="doca-driver", version="doca3.4.1-26.04-1.1.0.0-1"
    )
    upgrade_policy: UpgradePolicy = UpgradePolicy()
    startup_probe: OfedProbe = OfedProbe(initial_delay_seconds=10, period_seconds=20)
    liveness_probe: OfedProbe = OfedProbe(initial_delay_seconds=30, period_seconds=30)
    readiness_probe: OfedProbe = OfedProbe(initial_delay_seconds=10, period_seconds=30)
    termination_grace_period_seconds: int = Field(default=300, ge=0)
    resources: ContainerResources = ContainerResources(
        requests={"cpu": "1", "memory": "2Gi"}, limits={"memory": "6Gi"}
    )
    azure_module_blacklist: bool = Field(default=True, description="set OFED_BLACKLIST_MODULES_FILE (Azure)")
    env: tuple[EnvVar, ...] = ()
    force_precompiled: bool = False

    @field_validator("env")
    @classmethod
    def _env(cls, values: tuple[EnvVar, ...]) -> tuple[EnvVar, ...]:
        distinct_env_names([var.name for var in values])
        return values


class RdmaSelectors(ConfigModel):
    """Which RDMA devices a shared-plugin resource takes (OR within a list, AND across keys)."""

    vendors: tuple[str, ...] = ("15b3",)
    device_ids: tuple[str, ...] = Field(default=(), alias="deviceIDs")
    drivers: tuple[str, ...] = ()
    if_names: tuple[str, ...] = ()
    link_types: tuple[str, ...] = ("infiniband",)

    @model_validator(mode="after")
    def _something(self) -> Self:
        for name in ("vendors", "device_ids", "drivers", "if_names", "link_types"):
            if any(not item for item in getattr(self, name)):
                raise ValueError(f"{name}: entries must not be empty")
        if not any((self.vendors, self.device_ids, self.drivers, self.if_names, self.link_types)):
            raise ValueError("select devices by at least one of vendors, deviceIDs, drivers, ifNames, linkTypes")
        return self


class _RdmaDevicePlugin(ConfigModel):
    """What both RDMA device plugins share: the extended resource `<resourcePrefix>/<resourceName>` they advertise
    (each plugin declares the two fields with its own defaults)."""

    resource_prefix: str
    resource_name: str

    @field_validator("resource_name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_resource_name(value)

    @field_validator("resource_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        return check_resource_prefix(value)

    @property
    def resource(self) -> str:
        return f"{self.resource_prefix}/{self.resource_name}"


class RdmaSharedPluginSpec(_RdmaDevicePlugin):
    """k8s-rdma-shared-dev-plugin: every pod sees all matched HCAs; `rdmaHcaMax` pods per node share them."""

    image: NetworkImage = _mellanox("k8s-rdma-shared-dev-plugin")
    resource_prefix: str = "rdma"
    resource_name: str = "shared_ib"
    rdma_hca_max: int = Field(default=63, ge=1, le=1000)
    selectors: RdmaSelectors = RdmaSelectors()


class SriovPluginSpec(_RdmaDevicePlugin):
    """sriov-network-device-plugin: one `rdma/ib` unit per InfiniBand virtual function, RDMA devices mounted."""

    image: NetworkImage = _mellanox("sriov-network-device-plugin")
    resource_prefix: str = "rdma"
    resource_name: str = "ib"
    vendors: tuple[str, ...] = ("15b3",)
    link_types: tuple[str, ...] = ("infiniband",)


class IpPoolSpec(ConfigModel):
    """An nv-ipam IPPool: each node gets a block of `perNodeBlockSize` addresses of `subnet`."""

    name: DnsLabel = "ipoib-pool"
    subnet: str
    per_node_block_size: int = Field(default=256, ge=2)
    gateway: str | None = None

    @model_validator(mode="after")
    def _addresses(self) -> Self:
        try:
            network = ipaddress.ip_network(self.subnet, strict=True)
        except ValueError as error:
            raise ValueError(f"subnet {self.subnet!r} is not a network in CIDR form ({error})") from None
        if self.per_node_block_size > network.num_addresses:
            raise ValueError(f"perNodeBlockSize {self.per_node_block_size} exceeds the {network.num_addresses} "
                             f"addresses of {self.subnet}")
        if self.gateway is not None:
            try:
                gateway = ipaddress.ip_address(self.gateway)
            except ValueError:
                raise ValueError(f"gateway {self.gateway!r} is not an IP address") from None
            if gateway not in network:
                raise ValueError(f"gateway {self.gateway} is outside subnet {self.subnet}")
        return self


class IpoibSpec(ConfigModel):
    """An IPoIB secondary network for pods (`k8s.v1.cni.cncf.io/networks: <name>`), with Multus and IPoIB CNI.

    Addresses come from NVIDIA's IPAM (`ipPool`, an nv-ipam IPPool), or from another IPAM plugin's JSON config
    (`ipam`, e.g. whereabouts installed separately): one of the two is required.
    """

    name: DnsLabel = "aks-infiniband"
    network_namespace: DnsLabel = "default"
    master: str = Field(default="ibP257p0s0", min_length=1, description="the IB netdev IPoIB children hang from")
    ip_pool: IpPoolSpec | None = None
    ipam: str | None = Field(default=None, description="an IPAM plugin's JSON config, instead of ipPool")

    @field_validator("ipam")
    @classmethod
    def _json(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(f"is not JSON ({error.msg} at line {error.lineno})") from None
        if not isinstance(parsed, dict) or not isinstance(parsed.get("type"), str):
            raise ValueError('must be a JSON object naming its plugin, e.g. {"type": "whereabouts", ...}')
        return value


class NetworkSpec(ConfigModel):
    """NVIDIA's Network Operator: chart, NIC rule, NicClusterPolicy; see the module docstring."""

    enabled: bool | None = Field(default=None, description="default: on when a pool has InfiniBand")
    chart_version: str = CHART_VERSION
    chart: ChartSource = Field(default=ChartSource(), description="where Helm gets the chart; default: upstream")
    namespace: DnsLabel = "network-operator"
    mofed: Literal["operator", "host"] = "operator"
    ofed_driver: OfedDriverSpec = OfedDriverSpec()
    device_plugins: tuple[DevicePluginKind, ...] = ("sriov",)
    sriov_device_plugin: SriovPluginSpec = SriovPluginSpec()
    rdma_shared_device_plugin: RdmaSharedPluginSpec = RdmaSharedPluginSpec()
    ipoib: IpoibSpec | None = None
    multus_image: NetworkImage = _mellanox("multus-cni")
    cni_plugins_image: NetworkImage = _mellanox("plugins")
    ipoib_image: NetworkImage = _mellanox("ipoib-cni")
    nv_ipam_image: NetworkImage = _mellanox("nvidia-k8s-ipam")
    doca_telemetry: bool = False
    doca_telemetry_image: NetworkImage = NetworkImage(
        repository="nvcr.io/nvidia/doca", image="doca_telemetry", version="1.25.5-doca3.4.0-host"
    )
    vf_device_ids: tuple[str, ...] = Field(default=(), alias="vfDeviceIds")
    wait_for_mofed: bool = Field(
        default=False, description="pulumi up waits for network.nvidia.com/operator.mofed.wait=false on every IB node")
    mofed_timeout_seconds: int = Field(default=3600, ge=60, description="how long pulumi up waits for it")
    values: dict[str, Any] = Field(default={}, description="extra network-operator chart values, merged last")

    @field_validator("chart_version")
    @classmethod
    def _exact_version(cls, value: str) -> str:
        return check_chart_version(value, CHART_VERSION)

    @field_validator("device_plugins")
    @classmethod
    def _plugins(cls, values: tuple[DevicePluginKind, ...]) -> tuple[DevicePluginKind, ...]:
        if len(set(values)) != len(values):
            raise ValueError("a device plugin is listed twice")
        return values

    @field_validator("values")
    @classmethod
    def _chart_keys(cls, values: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(values) - CHART_VALUE_KEYS)
        if unknown:
            raise ValueError(f"not keys of the network-operator chart's values: {', '.join(unknown)} (it has "
                             f"{', '.join(sorted(CHART_VALUE_KEYS))})")
        return values

    @field_validator("vf_device_ids")
    @classmethod
    def _ids(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return check_pci_device_ids(values)

    @model_validator(mode="after")
    def _distinct_resources(self) -> Self:
        if set(self.device_plugins) == {"sriov", "shared"} and (
            self.sriov_device_plugin.resource == self.rdma_shared_device_plugin.resource
        ):
            raise ValueError(f"both device plugins would advertise {self.sriov_device_plugin.resource}: give "
                             "sriovDevicePlugin and rdmaSharedDevicePlugin different resourceName values")
        return self


def network_wanted(spec: NetworkSpec, pools: tuple[GpuPool, ...]) -> bool:
    """Whether the Network Operator is deployed: `enabled` when set, else whether a pool has InfiniBand."""
    if spec.enabled is not None:
        return spec.enabled
    return any(pool.has_infiniband for pool in pools)


def pool_vf_device_ids(pools: tuple[GpuPool, ...]) -> tuple[str, ...]:
    """The IB virtual-function PCI ids of the pools' NIC generations, in pool order."""
    ids: list[str] = []
    for pool in pools:
        hardware = pool.hardware
        if hardware is not None and hardware.infiniband is not None and hardware.infiniband.vf_device_id not in ids:
            ids.append(hardware.infiniband.vf_device_id)
    return tuple(ids)
