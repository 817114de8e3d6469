"""The config document: one YAML/JSON object that describes a whole GPU operator deployment.

```yaml
namespace: gpu-operator        # where every namespaced operand object goes
cluster: {...}                 # what the operator would detect at runtime: runtime, node OSes, Prometheus CRDs
agents: {...}                  # the agents image, and which operands run it instead of NVIDIA's images
nfd: {...}                     # Node Feature Discovery, as the chart's subchart switch, and its chart's source
operator: {...}                # an NVIDIA ClusterPolicy `spec`, verbatim, with the Helm chart's defaults
configs: {...}                 # contents of the ConfigMaps that `operator` names (device-plugin, MIG, metrics,
                               # the driver's repository and certificate files)
aks: {...}                     # the AKS cluster the GPU pools join (existing, or created by the stack)
pools: [...]                   # AKS GPU node pools; their taints, OS images and GPUs flow into the sections above
drivers: {...}                 # drivers of their own (NVIDIADriver specs) that pools name, or nodes a selector matches
network: {...}                 # NVIDIA's Network Operator: RDMA for InfiniBand pools (on by default with them)
monitoring: {...}              # GPU alerts and recording rules (PrometheusRule) and their thresholds
dra: {...}                     # NVIDIA's DRA driver for pools with gpuAllocation: dra, and claim templates
remediation: {...}             # what the operator controller does about GPU faults (observe mode by default)
registry: mirror.example.com   # a mirror every image and chart is pulled from (gpu-operator images lists them)
```

With pools, the config the operands are rendered from is the *effective* one (`gpu_operator.config.effective`):
every pool taint is tolerated by every operand, `cluster.operatingSystems` lists the pools' node images, and
InfiniBand pools get the GPUDirect RDMA wiring.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, ValidationError, field_validator

from gpu_operator.config.agents import AgentsConfig
from gpu_operator.config.aks import AksSpec
from gpu_operator.config.base import ConfigModel
from gpu_operator.config.chart_source import ChartSource, PublishedChart, check_chart_version
from gpu_operator.config.cluster import ClusterFacts
from gpu_operator.config.controller import ControllerSpec
from gpu_operator.config.clusterpolicy.spec import ClusterPolicySpec
from gpu_operator.config.dcgm_metrics import DcgmMetric, check_metrics_csv, metrics_csv
from gpu_operator.config.dra import DraSpec
from gpu_operator.config.device_plugin import DevicePluginConfig, parse_device_plugin_config
from gpu_operator.config.kube import DnsLabel
from gpu_operator.config.mig_parted import MigPartedConfig
from gpu_operator.config.mirror import check_registry
from gpu_operator.config.monitoring import MonitoringSpec
from gpu_operator.config.network import NetworkSpec
from gpu_operator.config.nvidia_driver import NvidiaDriverSpec
from gpu_operator.config.pools import GpuPool
from gpu_operator.config.remediation import RemediationSpec

__all__ = ["NFD_CHART", "NfdSpec", "OperandConfigs", "GpuStackConfig", "NFD_SUBCHART_VALUES"]

#: NFD's own chart, as the Kubernetes SIG publishes it; `nfd.chartVersion` defaults to its version.
NFD_CHART = PublishedChart("node-feature-discovery", "0.19.0", "oci://registry.k8s.io/nfd/charts")


_NFD_SERVICE_ACCOUNT = {"name": "node-feature-discovery", "create": False}

#: The GPU Operator chart's values for its node-feature-discovery subchart: PCI devices of classes 02 (network)
#: and 03 (display) labelled by vendor (`feature.node.kubernetes.io/pci-10de.present`), one ServiceAccount
#: created by the master and shared, and the `nvidia.com` label namespace allowed for GPU feature discovery.
NFD_SUBCHART_VALUES: dict[str, Any] = {
    "priorityClassName": "system-node-critical",
    "gc": {"enable": True, "replicaCount": 1, "serviceAccount": dict(_NFD_SERVICE_ACCOUNT)},
    "worker": {
        "serviceAccount": dict(_NFD_SERVICE_ACCOUNT),
        "tolerations": [
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        ],
        "config": {
            "sources": {
                "pci": {"deviceClassWhitelist": ["02", "0200", "0207", "0300", "0302"], "deviceLabelFields": ["vendor"]}
            }
        },
    },
    "master": {
        "serviceAccount": {"name": "node-feature-discovery", "create": True},
        "config": {"extraLabelNs": ["nvidia.com"]},
    },
}


class NfdSpec(ConfigModel):
    """Node Feature Discovery, as the GPU Operator chart's `node-feature-discovery` subchart.

    With `enabled`, the stack installs NFD's own Helm chart (`chartVersion`, from `chart`: its upstream OCI
    registry unless a mirror or a local chart is given, see :mod:`gpu_operator.config.chart_source`) with
    `values`, whose default is what NVIDIA's chart gives its subchart. The worker also tolerates every
    `daemonsets.tolerations` entry, so it runs wherever the operands run. Disable it when NFD already runs (for
    example the Network Operator's). `nodefeaturerules` adds the rule that labels nodes by loaded NVIDIA kernel
    modules.
    """

    enabled: bool = True
    node_feature_rules: bool = Field(default=False, alias="nodefeaturerules")
    chart_version: str = Field(default=NFD_CHART.version, description="version of the node-feature-discovery chart")
    chart: ChartSource = Field(default=ChartSource(), description="where Helm gets the chart; default: upstream")
    values: dict[str, Any] = Field(default=NFD_SUBCHART_VALUES, description="values of the node-feature-discovery chart")

    @field_validator("chart_version")
    @classmethod
    def _exact_version(cls, value: str) -> str:
        return check_chart_version(value, NFD_CHART.version)


_CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+\Z")


def _driver_files(value: dict[str, str] | tuple[str, ...] | None) -> dict[str, str] | tuple[str, ...] | None:
    """The files of a driver repoConfig/certConfig ConfigMap: each key becomes a file of that name."""
    if value is None:
        return None
    if not value:
        raise ValueError("lists no file; give the ConfigMap's files (key: contents) or its key names")
    keys = list(value)
    for key in keys:
        if not _CONFIGMAP_KEY.match(key) or key in (".", ".."):
            raise ValueError(f"{key!r} is not a ConfigMap key usable as a file name (letters, digits, '-', '_', '.')")
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise ValueError(f"key listed twice: {', '.join(duplicates)}")
    return value


#: A driver repoConfig/certConfig ConfigMap's files: contents to create it with, or the keys of an existing one.
DriverFiles = dict[str, str] | tuple[str, ...]


class OperandConfigs(ConfigModel):
    """ConfigMap contents created alongside the operands that read them.

    Each is created under the name the `operator` section gives (`devicePlugin.config.name`,
    `migManager.config.name`, `dcgmExporter.config.name`, `driver.repoConfig.configMapName`,
    `driver.certConfig.name`); without contents here, the name refers to a ConfigMap that already exists in the
    namespace. The driver mounts each key of its repository and certificate ConfigMaps as one file, as NVIDIA
    does, so the image's own repository files and CA bundle stay: a render cannot read a ConfigMap, so those keys
    are given here, as the files to create the ConfigMap with (`{file: contents}`) or as the key names of an
    existing one (`[file, ...]`).
    """

    device_plugin: dict[str, DevicePluginConfig] | None = Field(
        default=None, description="named device-plugin configs; nodes choose one with nvidia.com/device-plugin.config"
    )
    mig_manager: MigPartedConfig | None = Field(default=None, description="a custom mig-parted config")
    dcgm_exporter: str | None = Field(
        default=None, description="metrics CSV (DCGM field, Prometheus type, help), or a list of {field, type, help}"
    )
    driver_repo_config: DriverFiles | None = Field(
        default=None, description="package repository files for the driver (files to create, or existing keys)"
    )
    driver_cert_config: DriverFiles | None = Field(
        default=None, description="CA certificates for the driver's package downloads (files to create, or keys)"
    )

    @field_validator("device_plugin", mode="before")
    @classmethod
    def _yaml_text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {name: parse_device_plugin_config(config) for name, config in value.items()}
        return value

    @field_validator("device_plugin")
    @classmethod
    def _config_names(cls, value: dict[str, DevicePluginConfig] | None) -> dict[str, DevicePluginConfig] | None:
        for name in value or {}:
            if not name or not all(c.isalnum() or c in "-_." for c in name):
                raise ValueError(f"config name {name!r} must be a ConfigMap key (letters, digits, '-', '_', '.')")
        return value

    @field_validator("dcgm_exporter", mode="before")
    @classmethod
    def _typed_metrics(cls, value: Any) -> Any:
        """A typed list of metrics is written out as the CSV text (see :mod:`gpu_operator.config.dcgm_metrics`)."""
        if not isinstance(value, list):
            return value
        metrics = []
        for index, item in enumerate(value):
            try:
                metrics.append(DcgmMetric.model_validate(item))
            except ValidationError as error:
                first = error.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                raise ValueError(f"[{index}]{'.' + where if where else ''}: {first['msg']}") from None
        return metrics_csv(metrics)

    @field_validator("dcgm_exporter")
    @classmethod
    def _csv(cls, value: str | None) -> str | None:
        return check_metrics_csv(value) if value is not None else None

    @field_validator("driver_repo_config", "driver_cert_config")
    @classmethod
    def _files(cls, value: DriverFiles | None) -> DriverFiles | None:
        return _driver_files(value)


class GpuStackConfig(ConfigModel):
    """Everything needed to render the GPU operator's operands, and the AKS GPU pools, for one cluster."""

    namespace: DnsLabel = "gpu-operator"
    cluster: ClusterFacts = ClusterFacts()
    agents: AgentsConfig = AgentsConfig()
    nfd: NfdSpec = NfdSpec()
    operator: ClusterPolicySpec = ClusterPolicySpec()
    configs: OperandConfigs = OperandConfigs()
    aks: AksSpec | None = None
    pools: tuple[GpuPool, ...] = ()
    drivers: dict[str, NvidiaDriverSpec] = Field(default={}, description="drivers of their own, by NVIDIADriver name")
    network: NetworkSpec = NetworkSpec()
    monitoring: MonitoringSpec = MonitoringSpec()
    dra: DraSpec = DraSpec()
    controller: ControllerSpec = ControllerSpec()
    remediation: RemediationSpec = RemediationSpec()
    registry: str | None = Field(
        default=None, description="a registry mirror (host[:port][/path]) every image and chart the stack pulls comes "
                                  "from, each under its upstream path; `gpu-operator images` lists them")

    @field_validator("registry")
    @classmethod
    def _mirror(cls, value: str | None) -> str | None:
        return None if value is None else check_registry(value)

    @property
    def controller_enabled(self) -> bool:
        """The operator controller runs: asked for, or by default whenever the agents image is configured."""
        enabled = self.controller.enabled
        return self.agents.image_source is not None if enabled is None else enabled

    def pool(self, name: str) -> GpuPool:
        """The pool called `name`; KeyError when there is none."""
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(f"no pool named {name!r} (pools: {', '.join(p.name for p in self.pools) or 'none'})")
