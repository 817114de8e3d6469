"""The DRA stack render: chart values against the chart's own values file, driver roots, DeviceClasses, claims."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_operator.config import parse_config
from gpu_operator.facts.dra_driver import CHART, DEVICE_CLASSES
from gpu_operator.render.dra import device_classes, dra_objects, render_dra
from tests.support.reference import REFERENCE_DATA
from tests.support.schemas import builtin_errors

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
H100_DRA = {"name": "h100dra", "vmSize": "Standard_ND96isr_H100_v5", "gpuAllocation": "dra"}
DRIVER = {"driver": {"version": "580.95.05"}}
VALUES_FILE = REFERENCE_DATA / "helm-values" / "dra-driver-nvidia-gpu-v0.4.1-values.yaml"


def config(**sections: Any) -> Any:
    pools = sections.pop("pools", [H100_DRA])
    return parse_config({"aks": AKS, "pools": pools, "operator": sections.pop("operator", DRIVER), **sections})


def _paths(values: Any, prefix: str = "") -> set[str]:
    if not isinstance(values, dict) or not values:
        return {prefix}
    return {path for key, value in values.items() for path in _paths(value, f"{prefix}.{key}" if prefix else key)}


def test_every_value_we_set_is_a_value_of_the_pinned_chart() -> None:
    if not VALUES_FILE.exists():
        pytest.fail(f"the chart's values file is not at {VALUES_FILE}")
    upstream = yaml.safe_load(VALUES_FILE.read_text())
    rendered = render_dra(config())
    assert rendered is not None
    ours = _paths(rendered.chart.values)
    known = _paths(upstream)
    # nodeSelector's own keys are labels, not chart values
    unknown = {p for p in ours if p not in known and not p.startswith("kubeletPlugin.nodeSelector.")}
    assert unknown == set()
    assert rendered.chart.version == CHART.version == "0.4.1"


def test_values() -> None:
    rendered = render_dra(config(pools=[H100_DRA, {"name": "t4", "vmSize": "Standard_NC4as_T4_v3",
                                                   "taints": ["team=ml:NoExecute"]}]))
    assert rendered is not None
    values = rendered.chart.values
    assert values["nvidiaDriverRoot"] == "/run/nvidia/driver"
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resourceApiVersion"] == "resource.k8s.io/v1"
    assert values["kubeletPlugin"]["nodeSelector"] == {"nvidia.com/dra-kubelet-plugin": "true"}
    assert values["kubeletPlugin"]["tolerations"][0] == {"key": "nvidia.com/gpu", "operator": "Exists",
                                                         "effect": "NoSchedule"}
    assert {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoExecute"} in (
        values["kubeletPlugin"]["tolerations"])
    assert rendered.namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


@pytest.mark.parametrize("sections, root", [
    ({"operator": {"driver": {"enabled": False}}}, "/"),
    ({"pools": [{**H100_DRA, "gpuDriver": "aks"}], "operator": {"driver": {"enabled": False},
                                                                "toolkit": {"enabled": False}}}, "/"),
    ({"operator": {**DRIVER, "hostPaths": {"driverInstallDir": "/opt/nvidia/driver"}}}, "/opt/nvidia/driver"),
    ({"dra": {"driverRoot": "/home/kubernetes/bin/nvidia"}}, "/home/kubernetes/bin/nvidia"),
])
def test_driver_root_follows_who_installs_the_driver(sections: dict[str, Any], root: str) -> None:
    rendered = render_dra(config(**sections))
    assert rendered is not None and rendered.chart.values["nvidiaDriverRoot"] == root


def test_switches_and_user_values_win() -> None:
    values = {"logVerbosity": "6", "kubeletPlugin": {"priorityClassName": "x"}}
    rendered = render_dra(config(dra={"computeDomains": False, "values": values}))
    assert rendered is not None
    values = rendered.chart.values
    assert values["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}}
    assert values["logVerbosity"] == "6"
    assert values["kubeletPlugin"]["priorityClassName"] == "x"
    assert values["kubeletPlugin"]["nodeSelector"] == {"nvidia.com/dra-kubelet-plugin": "true"}


def test_compute_domains_only_do_not_override_the_gpu_guard() -> None:
    rendered = render_dra(config(pools=[{**H100_DRA, "gpuAllocation": "devicePlugin"}],
                                 dra={"enabled": True, "gpus": False}))
    assert rendered is not None and "gpuResourcesEnabledOverride" not in rendered.chart.values


def test_off_without_dra() -> None:
    assert render_dra(config(pools=[{**H100_DRA, "gpuAllocation": "devicePlugin"}])) is None
    assert dra_objects(config(pools=[{**H100_DRA, "gpuAllocation": "devicePlugin"}])) == []


@pytest.mark.parametrize("version", ["1.34", "1.36"])
def test_device_classes_and_claim_templates_validate_strictly(version: str) -> None:
    template = {"name": "two", "namespace": "ml", "spec": {"devices": {
        "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
                     {"name": "all", "exactly": {"deviceClassName": "mig.nvidia.com", "allocationMode": "All"}}],
        "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]}}}
    objects = [*device_classes(), *dra_objects(config(dra={"namespaces": {"ml": "existing"},
                                                            "claimTemplates": [template]}))]
    assert [o["kind"] for o in objects].count("ResourceClaimTemplate") == 1
    for obj in objects:
        assert builtin_errors(obj, version) == [], obj["metadata"]["name"]


def test_device_classes_follow_the_switches() -> None:
    assert [c["metadata"]["name"] for c in device_classes(gpus=True, compute_domains=False)] == [
        "gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"]
    assert [c["metadata"]["name"] for c in device_classes(gpus=False)] == [
        "compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com"]
    [gpu] = [c for c in device_classes() if c["metadata"]["name"] == "gpu.nvidia.com"]
    assert gpu["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    assert len(DEVICE_CLASSES) == 5


def test_dra_pools_advertise_no_extended_resource() -> None:
    from gpu_operator.render.aks.resources import fleet_gpu_resource_names

    assert fleet_gpu_resource_names(config()) == []
    mixed = config(pools=[H100_DRA, {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}])
    assert fleet_gpu_resource_names(mixed) == ["nvidia.com/gpu"]
