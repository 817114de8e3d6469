"""Sections for the telemetry operands: the DCGM host engine, the DCGM exporter and the node status exporter."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.clusterpolicy.common import NamedConfigRef, OperandSpec
from gpu_operator.config.clusterpolicy.runtime import ServiceMonitorConfig
from gpu_operator.config.kube import AnnotationMap

__all__ = [
    "DcgmSpec",
    "DcgmExporterServiceConfig",
    "HpcJobMapping",
    "DcgmExporterSpec",
    "NodeStatusExporterSpec",
]


class DcgmSpec(OperandSpec):
    """The standalone `nvidia-dcgm` host engine (off by default: the exporter embeds one)."""

    enabled: bool = False
    repository: str = "nvcr.io/nvidia/cloud-native"
    image: str = "dcgm"
    version: str = "4.6.0-1-ubuntu24.04"
    host_port: int | None = Field(default=None, ge=1, le=65535)


class DcgmExporterServiceConfig(ConfigModel):
    type: Literal["ClusterIP", "NodePort", "LoadBalancer"] | None = None
    internal_traffic_policy: Literal["Cluster", "Local"] | None = "Cluster"


class HpcJobMapping(ConfigModel):
    """Label GPU metrics with HPC (e.g. Slurm) job ids read from a host directory."""

    enabled: bool = False
    directory: str = ""


class DcgmExporterSpec(OperandSpec):
    """The `nvidia-dcgm-exporter` operand (Prometheus GPU metrics on :9400)."""

    repository: str = "nvcr.io/nvidia/k8s"
    image: str = "dcgm-exporter"
    version: str = "4.6.0-4.8.3-distroless"
    annotations: AnnotationMap = {}
    config: NamedConfigRef = NamedConfigRef()
    host_pid: bool = Field(default=False, alias="hostPID")
    hpc_job_mapping: HpcJobMapping | None = None
    enable_pod_labels: bool = False
    enable_pod_uid: bool = Field(default=False, alias="enablePodUID")
    pod_label_allowlist_regex: tuple[str, ...] | None = None
    service: DcgmExporterServiceConfig = DcgmExporterServiceConfig()
    # The chart's `enabled: true` means "where the ServiceMonitor CRD exists", which NVIDIA checks at runtime;
    # unset here means the same, decided by `cluster.prometheusOperator` (true or false is the user's explicit ask).
    service_monitor: ServiceMonitorConfig = ServiceMonitorConfig(
        interval="15s", scrape_timeout="10s", honor_labels=False, additional_labels={}, relabelings=()
    )


class NodeStatusExporterSpec(OperandSpec):
    """The `nvidia-node-status-exporter` operand (`gpu_operator_node_*` metrics on :8000)."""

    enabled: bool = False
    repository: str = "nvcr.io/nvidia"
    image: str = "gpu-operator"
    version: str = "v26.7.0"
