"""Importing NVIDIA's Helm values gives what the chart gives (reference/gpu-operator.md §2 and §10)."""

from __future__ import annotations

from typing import Any

from gpu_operator.config import parse_config
from gpu_operator.config.importers import import_helm_values
from gpu_operator.config.loader import read_yaml_mapping
from gpu_operator.render import render, render_operands
from gpu_operator.render.nfd import nfd_chart
from tests.support.reference import reference_file
from tests.support.schemas import validate_objects

#: The DaemonSets a default `helm install nvidia/gpu-operator` v26.7.0 ends up with (DCGM and the node status
#: exporter are off; sandbox operands need sandboxWorkloads).
CHART_DEFAULT_DAEMONSETS = {
    "nvidia-driver-daemonset",
    "nvidia-container-toolkit-daemonset",
    "nvidia-operator-validator",
    "nvidia-device-plugin-daemonset",
    "nvidia-device-plugin-mps-control-daemon",
    "nvidia-dcgm-exporter",
    "gpu-feature-discovery",
    "nvidia-mig-manager",
}


def _imported(relative: str) -> Any:
    return parse_config(import_helm_values(read_yaml_mapping(reference_file(relative))))


def _daemonsets(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == "DaemonSet"}


def test_chart_default_values_render_the_charts_operand_set() -> None:
    config = _imported("helm-values/gpu-operator-v26.7.0-values.yaml")
    objects = render(config)
    assert set(_daemonsets(objects)) == CHART_DEFAULT_DAEMONSETS
    assert nfd_chart(config) is not None
    assert validate_objects(objects) == []
    # NVIDIA creates the exporter's ServiceMonitor only where its CRD exists: not on a plain cluster (our default)
    assert [o for o in objects if o["kind"] == "ServiceMonitor"] == []
    values = import_helm_values(read_yaml_mapping(reference_file("helm-values/gpu-operator-v26.7.0-values.yaml")))
    with_crds = render(parse_config({**values, "cluster": {"prometheusOperator": True}}))
    monitors = [o for o in with_crds if o["kind"] == "ServiceMonitor"]
    assert [m["metadata"]["name"] for m in monitors] == ["nvidia-dcgm-exporter"]
    assert monitors[0]["spec"]["endpoints"][0]["interval"] == "15s"


def test_chart_default_values_render_like_our_defaults() -> None:
    config = _imported("helm-values/gpu-operator-v26.7.0-values.yaml")
    assert [o.state for o in render_operands(config)] == [o.state for o in render_operands(parse_config({}))]
    assert render(config) == render(parse_config({}))


def test_azure_values() -> None:
    config = _imported("helm-values/aks-rdma-infiniband/gpu-operator-values.yaml")
    objects = render(config)
    daemonsets = _daemonsets(objects)
    assert nfd_chart(config) is None
    assert "nvidia-mig-manager" not in daemonsets
    sandbox = {"nvidia-vgpu-device-manager", "nvidia-vfio-manager", "nvidia-sandbox-device-plugin-daemonset"}
    assert not sandbox & set(daemonsets)
    driver = daemonsets["nvidia-driver-daemonset"]["spec"]["template"]["spec"]
    assert "nvidia-peermem-ctr" in [c["name"] for c in driver["containers"]]
    [monitor] = [o for o in objects if o["kind"] == "ServiceMonitor"]
    assert monitor["metadata"]["name"] == "nvidia-dcgm-exporter"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
    assert validate_objects(objects) == []


def test_previous_release_values_render_their_images() -> None:
    config = _imported("helm-values/gpu-operator-v25.10.1-values.yaml")
    daemonsets = _daemonsets(render(config))
    driver = daemonsets["nvidia-driver-daemonset"]["spec"]["template"]["spec"]["containers"][0]
    assert driver["image"] == "nvcr.io/nvidia/driver:580.105.08-ubuntu22.04"
    toolkit = daemonsets["nvidia-container-toolkit-daemonset"]["spec"]["template"]["spec"]["containers"][0]
    assert toolkit["image"] == "nvcr.io/nvidia/k8s/container-toolkit:v1.18.1"
