"""The `dra` section: NVIDIA's DRA driver instead of the device plugin, per pool.

```yaml
pools:
  - name: h100dra
    vmSize: Standard_ND96isr_H100_v5
    gpuAllocation: dra             # devicePlugin (the default) | dra: GPUs are claimed through DRA here
dra:
  enabled: true                    # default: on when a pool has gpuAllocation: dra
  namespace: dra-driver-nvidia-gpu # the chart refuses `default`
  chart: {}                        # where Helm gets the chart (0.4.1): upstream, {repository}, {oci} or {path}
  gpus: true                       # resources.gpus.enabled: GPUs, MIG devices and vfio GPUs as DRA devices
  computeDomains: true             # resources.computeDomains.enabled: multi-node NVLink ComputeDomains (IMEX)
  driverRoot: null                 # default /run/nvidia/driver when the operator installs the driver, else /
  kubernetesVersion: null          # the cluster's version where `aks` does not give it (DRA needs 1.34+)
  values: {}                       # further values of the dra-driver-nvidia-gpu chart, merged last
  namespaces: {ml: existing}       # each claimTemplates namespace the stack does not own: existing | create
  claimTemplates:                  # ResourceClaimTemplates created with the driver (resource.k8s.io/v1)
    - name: one-h100
      namespace: ml
      spec:                        # a ResourceClaimSpec: requests with CEL selectors, constraints
        devices:
          requests:
            - name: gpu
              exactly:
                deviceClassName: gpu.nvidia.com
                selectors:
                  - cel: {expression: "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')"}
            # or firstAvailable: [{name: mig, deviceClassName: mig.nvidia.com}, {name: full, ...}]
          config:                  # the driver's opaque config for the requests' devices (all when requests is empty)
            - opaque:
                driver: gpu.nvidia.com
                parameters:        # GpuConfig (full GPUs) or MigDeviceConfig, resource.nvidia.com/v1beta1
                  apiVersion: resource.nvidia.com/v1beta1
                  kind: GpuConfig
                  sharing: {strategy: TimeSlicing, timeSlicingConfig: {interval: Long}}   # or MPS + mpsConfig
```

The DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu, chart 0.4.1, pinned) runs its kubelet plugin only on
nodes labelled `nvidia.com/dra-kubelet-plugin=true`: the pools with `gpuAllocation: dra` (and, with `gpus: false`,
every container pool, for ComputeDomains beside the device plugin). Those pools carry
`nvidia.com/gpu.deploy.device-plugin=false`, so the same GPUs are never advertised twice, and the driver manager
is told that label (`NODE_LABEL_FOR_GPU_POD_EVICTION`) so it evicts pods holding DRA claims before a driver
upgrade. The rules that span sections live in :mod:`gpu_operator.config.dra_checks`.

Claim templates live where the workloads are, usually a namespace the stack does not own. Each such namespace is
declared in `dra.namespaces`: `existing` (the cluster has it; the stack never creates, labels or deletes it) or
`create` (the stack creates it before the templates and deletes it on destroy, with everything in it). An
undeclared one is refused before anything is created (:mod:`gpu_operator.config.namespace_checks`), rather than
failing mid-update with `namespaces "ml" not found`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.chart_source import ChartSource, PublishedChart
from gpu_operator.config.kube import DnsLabel, EnvVar, Quantity
from gpu_operator.config.pools import GpuAllocation, GpuPool, check_kubernetes_version
from gpu_operator.facts.dra_driver import CHART, DRA_NODE_LABEL

__all__ = [
    "ClaimConfig",
    "ClaimConstraint",
    "ClaimRequest",
    "DeviceSubRequest",
    "GpuConfigParameters",
    "GpuSharing",
    "ClaimSpec",
    "ClaimTemplate",
    "DeviceRequest",
    "DRA_CHART",
    "DraSpec",
    "EVICTION_LABEL_ENV",
    "MAX_CLAIM_DEVICES",
    "GpuAllocation",
    "CelSelector",
    "NamespaceUse",
    "dra_effective",
    "dra_node_pools",
    "dra_wanted",
]

#: The DRA driver's chart as kubernetes-sigs publish it; the stack renders for this version only (pinned).
DRA_CHART = PublishedChart(CHART.name, CHART.version, CHART.repository)
#: The driver manager's variable naming the label of nodes whose GPU pods hold DRA claims.
EVICTION_LABEL_ENV = "NODE_LABEL_FOR_GPU_POD_EVICTION"
#: resource.k8s.io/v1 limits (types.go): devices one claim is allocated (`AllocationResultsMaxSize`), and the
#: requests, constraints and config entries a claim lists (`DeviceRequestsMaxSize`, `DeviceConstraintsMaxSize`,
#: `DeviceConfigMaxSize`).
MAX_CLAIM_DEVICES = 32


#: A claim template namespace outside the stack's own: the cluster has it, or the stack creates it.
NamespaceUse = Literal["existing", "create"]


class CelExpression(ConfigModel):
    expression: str = Field(min_length=1)


class CelSelector(ConfigModel):
    """One selector of a request: a CEL expression over `device`."""

    cel: CelExpression


class DeviceRequest(ConfigModel):
    """`exactly`: devices of one DeviceClass that pass every selector (`count` of them, or `All`)."""

    device_class_name: str = Field(min_length=1)
    selectors: tuple[CelSelector, ...] = ()
    allocation_mode: Literal["ExactCount", "All"] = "ExactCount"
    count: int | None = Field(default=None, ge=1, le=MAX_CLAIM_DEVICES)
    admin_access: bool | None = None


class DeviceSubRequest(DeviceRequest):
    """One alternative of `firstAvailable`: a named `exactly`, tried in order until one can be allocated."""

    name: DnsLabel


class ClaimRequest(ConfigModel):
    """One request of a claim: `name`, then `exactly` (one DeviceClass) or `firstAvailable` (alternatives, the
    first that can be allocated is taken)."""

    name: DnsLabel
    exactly: DeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] | None = Field(default=None, min_length=1, max_length=8)

    @model_validator(mode="after")
    def _one_form(self) -> ClaimRequest:
        if (self.exactly is None) == (self.first_available is None):
            raise ValueError("give exactly (one DeviceClass) or firstAvailable (alternatives, tried in order), "
                             "not both and not neither")
        return self

    @property
    def alternatives(self) -> tuple[tuple[str, DeviceRequest], ...]:
        """(path below the request, request) of `exactly`, or of each `firstAvailable` alternative."""
        if self.exactly is not None:
            return (("exactly", self.exactly),)
        return tuple((f"firstAvailable[{i}]", sub) for i, sub in enumerate(self.first_available or ()))


SharingStrategy = Literal["TimeSlicing", "MPS"]
TimeSliceInterval = Literal["Default", "Short", "Medium", "Long"]


class TimeSlicingConfig(ConfigModel):
    """`timeSlicingConfig` (resource.nvidia.com/v1beta1 sharing.go): the time slice the GPU gives each process."""

    interval: TimeSliceInterval | None = None


class MpsConfig(ConfigModel):
    """`mpsConfig`: the MPS control daemon's defaults for the claim's processes."""

    default_active_thread_percentage: int | None = Field(default=None, ge=0, le=100)
    default_pinned_device_memory_limit: Quantity | None = None
    default_per_device_pinned_memory_limit: dict[str, Quantity] | None = None


class GpuSharing(ConfigModel):
    """`sharing` of a GpuConfig / MigDeviceConfig: time-slicing or MPS, with the matching settings only."""

    strategy: SharingStrategy
    time_slicing_config: TimeSlicingConfig | None = None
    mps_config: MpsConfig | None = None

    @model_validator(mode="after")
    def _settings_match(self) -> GpuSharing:
        if self.strategy == "TimeSlicing" and self.mps_config is not None:
            raise ValueError("mpsConfig goes with strategy MPS; remove it, or set strategy: MPS")
        if self.strategy == "MPS" and self.time_slicing_config is not None:
            raise ValueError("timeSlicingConfig goes with strategy TimeSlicing; remove it, or set strategy: "
                             "TimeSlicing")
        return self


#: The driver's API group for opaque device config (api/nvidia.com/resource/v1beta1).
DRIVER_CONFIG_API = "resource.nvidia.com/v1beta1"


class GpuConfigParameters(ConfigModel):
    """`opaque.parameters` for the gpu.nvidia.com driver: a GpuConfig (full GPUs) or MigDeviceConfig (MIG
    devices) of resource.nvidia.com/v1beta1, whose `sharing` the kubelet plugin applies when it prepares them."""

    api_version: Literal["resource.nvidia.com/v1beta1"]
    kind: Literal["GpuConfig", "MigDeviceConfig"]
    sharing: GpuSharing | None = None

    @model_validator(mode="after")
    def _mig_sharing(self) -> GpuConfigParameters:
        if self.kind == "MigDeviceConfig" and self.sharing is not None and self.sharing.time_slicing_config:
            raise ValueError("a MigDeviceConfig's sharing takes no timeSlicingConfig (MIG devices time-slice "
                             "with the defaults); remove it")
        return self


class OpaqueConfig(ConfigModel):
    """`opaque`: parameters the named driver reads; only gpu.nvidia.com's are typed here."""

    driver: Literal["gpu.nvidia.com"]
    parameters: GpuConfigParameters


class ClaimConfig(ConfigModel):
    """`config[]` of a claim: opaque driver parameters for the devices of `requests` (all requests when empty)."""

    requests: tuple[str, ...] = ()
    opaque: OpaqueConfig


class ClaimConstraint(ConfigModel):
    """Devices of the named requests (all when empty) share the value of `matchAttribute`."""

    requests: tuple[str, ...] = ()
    match_attribute: str = Field(min_length=1)


class ClaimDevices(ConfigModel):
    requests: tuple[ClaimRequest, ...] = Field(min_length=1, max_length=MAX_CLAIM_DEVICES)
    constraints: tuple[ClaimConstraint, ...] = Field(default=(), max_length=MAX_CLAIM_DEVICES)
    config: tuple[ClaimConfig, ...] = Field(default=(), max_length=MAX_CLAIM_DEVICES)

    @model_validator(mode="after")
    def _devices_fit_one_claim(self) -> ClaimDevices:
        """The scheduler allocates at most 32 devices to a claim ("exceeds the claim limit"): the counts of the
        requests (the largest alternative of a firstAvailable) add up to at most that."""
        wanted = sum(max(exact.count or 1 for _, exact in request.alternatives) for request in self.requests
                     if all(exact.allocation_mode == "ExactCount" for _, exact in request.alternatives))
        if wanted > MAX_CLAIM_DEVICES:
            raise ValueError(f"the requests ask for {wanted} devices and the scheduler allocates at most "
                             f"{MAX_CLAIM_DEVICES} to one claim: split them over several claims")
        return self


class ClaimSpec(ConfigModel):
    """A ResourceClaimSpec (`resource.k8s.io/v1`), with the fields a GPU claim uses."""

    devices: ClaimDevices


class ClaimTemplate(ConfigModel):
    """A ResourceClaimTemplate to create: pods name it in `resourceClaims[].resourceClaimTemplateName`."""

    name: DnsLabel
    namespace: DnsLabel
    spec: ClaimSpec


class DraSpec(ConfigModel):
    """NVIDIA's DRA driver: where it runs, what it publishes, and claim templates created with it."""

    enabled: bool | None = Field(default=None, description="default: on when a pool has gpuAllocation: dra")
    namespace: DnsLabel = "dra-driver-nvidia-gpu"
    chart: ChartSource = Field(default=ChartSource(), description="where Helm gets the chart; default: upstream")
    gpus: bool = True
    compute_domains: bool = True
    driver_root: str | None = Field(
        default=None, description="default: /run/nvidia/driver when the operator installs the driver, else /"
    )
    kubernetes_version: str | None = Field(
        default=None, description="the cluster's Kubernetes version where the aks section does not give it"
    )
    values: dict[str, Any] = Field(default_factory=dict, description="further chart values, merged last")
    claim_templates: tuple[ClaimTemplate, ...] = ()
    namespaces: dict[DnsLabel, NamespaceUse] = Field(
        default_factory=dict,
        description="each claimTemplates namespace the stack does not own: existing (the cluster has it) or create",
    )

    @field_validator("kubernetes_version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        return check_kubernetes_version(value)

    @field_validator("driver_root")
    @classmethod
    def _root(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError(f"{value!r} must be an absolute host path such as /run/nvidia/driver or /")
        return value


def dra_wanted(dra: DraSpec, pools: tuple[GpuPool, ...]) -> bool:
    """Whether the DRA driver is deployed: `dra.enabled`, else whether a pool allocates GPUs through DRA."""
    if dra.enabled is not None:
        return dra.enabled
    return any(pool.gpu_allocation == "dra" for pool in pools)


def dra_node_pools(dra: DraSpec, pools: tuple[GpuPool, ...]) -> tuple[GpuPool, ...]:
    """The pools whose nodes run the kubelet plugin (labelled `nvidia.com/dra-kubelet-plugin=true`)."""
    if not dra_wanted(dra, pools):
        return ()
    if not dra.gpus:
        return tuple(pool for pool in pools if pool.workload == "container")
    return tuple(pool for pool in pools if pool.gpu_allocation == "dra")


def dra_effective(doc: Any) -> Any:
    """`dra.enabled` resolved, and the driver manager told the DRA node label (unless the env already sets it)."""
    if not dra_wanted(doc.dra, doc.pools):
        return doc
    changes: dict[str, Any] = {"dra": doc.dra.model_copy(update={"enabled": True})}
    driver = doc.operator.driver
    manager = driver.manager
    if driver.enabled and all(var.name != EVICTION_LABEL_ENV for var in manager.env):
        env = (*manager.env, EnvVar(name=EVICTION_LABEL_ENV, value=DRA_NODE_LABEL))
        driver = driver.model_copy(update={"manager": manager.model_copy(update={"env": env})})
        changes["operator"] = doc.operator.model_copy(update={"driver": driver})
    return doc.model_copy(update=changes)
