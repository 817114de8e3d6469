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
upgrade. The claim spec and its rules live in :mod:`gpu_operator.config.dra_claims` (shared with
`gpu-operator dra match`), the rules that span sections in :mod:`gpu_operator.config.dra_checks`.

Claim templates live where the workloads are, usually a namespace the stack does not own. Each such namespace is
declared in `dra.namespaces`: `existing` (the cluster has it; the stack never creates, labels or deletes it) or
`create` (the stack creates it before the templates and deletes it on destroy, with everything in it). An
undeclared one is refused before anything is created (:mod:`gpu_operator.config.namespace_checks`), rather than
failing mid-update with `namespaces "ml" not found`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.chart_source import ChartSource, PublishedChart
from gpu_operator.config.dra_claims import ClaimSpec
from gpu_operator.config.kube import DnsLabel, EnvVar
from gpu_operator.config.pools import GpuAllocation, GpuPool, check_kubernetes_version
from gpu_operator.facts.dra_driver import CHART, DRA_NODE_LABEL

__all__ = [
    "ClaimTemplate",
    "DRA_CHART",
    "DraSpec",
    "EVICTION_LABEL_ENV",
    "GpuAllocation",
    "NamespaceUse",
    "dra_effective",
    "dra_node_pools",
    "dra_wanted",
]

#: The DRA driver's chart as kubernetes-sigs publish it; the stack renders for this version only (pinned).
DRA_CHART = PublishedChart(CHART.name, CHART.version, CHART.repository)
#: The driver manager's variable naming the label of nodes whose GPU pods hold DRA claims.
EVICTION_LABEL_ENV = "NODE_LABEL_FOR_GPU_POD_EVICTION"


#: A claim template namespace outside the stack's own: the cluster has it, or the stack creates it.
NamespaceUse = Literal["existing", "create"]


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
