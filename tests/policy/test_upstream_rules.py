"""The policies follow what upstream ships and accepts: the DRA driver's privileged plugin, the Network Operator's
webhook schemas for RDMA device-plugin selectors, dcgm-exporter's own memory limit, and the scheduler's arithmetic
for extended resources and taints. Each case here was a false positive or a miss before (issue 21, items 13-15).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from gpu_operator.policy import POLICIES, PolicyContext
from gpu_operator.policy.model import Violation

TAINT = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
FLEET = PolicyContext(pool_taints=((TAINT,),), max_infiniband_nics=8)


def violations(name: str, objects: list[dict[str, Any]], context: PolicyContext = FLEET) -> list[Violation]:
    [policy] = [p for p in POLICIES if p.name == name]
    return policy.evaluate(objects, context)


def kubelet_plugin(name: str = "dra-driver-nvidia-gpu", chart_label: str = "dra-driver-nvidia-gpu-0.4.1",
                   image: str = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1") -> dict[str, Any]:
    """The DRA chart's kubelet-plugin DaemonSet as `helm template` renders it (dra-driver-nvidia-gpu 0.4.1
    templates/kubeletplugin.yaml: `<name>-kubelet-plugin`, the init container `privileged: true`; values.yaml
    kubeletPlugin.containers.computeDomains / gpus securityContext `privileged: true`)."""
    privileged = {"privileged": True}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": f"{name}-kubelet-plugin", "namespace": "dra-driver-nvidia-gpu",
                     "labels": {"helm.sh/chart": chart_label, "app.kubernetes.io/name": name}},
        "spec": {"template": {"spec": {
            "initContainers": [{"name": "init-container", "image": image, "securityContext": privileged}],
            "containers": [{"name": "compute-domains", "image": image, "securityContext": privileged},
                           {"name": "gpus", "image": image, "securityContext": privileged}],
        }}},
    }


def test_the_dra_drivers_kubelet_plugin_may_run_privileged() -> None:
    """Item 13: the DRA chart's kubelet plugin is privileged by design; a DRA stack is not blocked for it."""
    assert violations("privileged-only-gpu-operands", [kubelet_plugin()]) == []
    # the chart's nameOverride renames it; its chart label and image still say what it is
    renamed = kubelet_plugin("gpu-dra", "gpu-dra-0.4.1")
    assert violations("privileged-only-gpu-operands", [renamed]) == []


@pytest.mark.parametrize("impostor", [
    kubelet_plugin("my-agent", "my-agent-1.0.0", "example.com/my-agent:1.0"),  # another image
    kubelet_plugin("gpu-dra", "other-chart-0.4.1"),  # the label names another chart
])
def test_other_privileged_kubelet_plugins_are_still_flagged(impostor: dict[str, Any]) -> None:
    assert len(violations("privileged-only-gpu-operands", [impostor])) == 3


def _policy(shared: dict[str, Any] | None = None, sriov: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if shared is not None:
        spec["rdmaSharedDevicePlugin"] = {"config": json.dumps(shared)}
    if sriov is not None:
        spec["sriovDevicePlugin"] = {"config": json.dumps(sriov)}
    return {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
            "metadata": {"name": "nic-cluster-policy"}, "spec": spec}


#: Configs Mellanox/network-operator v26.4.1's webhook accepts (webhook-schemas/rdma_shared_device_plugin.json:
#: an entry needs `selectors` with one of vendors/deviceIDs/drivers/ifNames/linkTypes, or `devices`;
#: net_device.json / aux_net_device.json / accelerator_selector.json: a selector names one of its type's keys;
#: applied by api/v1alpha1/validator/nicpolicy_webhook.go validateSriovNetworkDevicePluginResource).
ACCEPTED = {
    "shared plugin devices": _policy(shared={"configList": [
        {"resourceName": "rdma_shared_device_a", "rdmaHcaMax": 63, "devices": ["ib0", "ib1"]}]}),
    "shared linkTypes only": _policy(shared={"configList": [
        {"resourceName": "shared_ib", "rdmaHcaMax": 63, "selectors": {"linkTypes": ["infiniband"]}}]}),
    "sriov by devices": _policy(sriov={"resourceList": [
        {"resourcePrefix": "rdma", "resourceName": "ib", "selectors": [{"devices": ["101e"]}]}]}),
    "sriov by pfNames": _policy(sriov={"resourceList": [
        {"resourcePrefix": "rdma", "resourceName": "ib", "selectors": {"pfNames": ["ibp24s0"]}}]}),
    "sriov isRdma": _policy(sriov={"resourceList": [
        {"resourceName": "ib", "selectors": [{"isRdma": True, "linkTypes": ["infiniband"]}]}]}),
    "sriov aux device types": _policy(sriov={"resourceList": [
        {"resourceName": "sf", "deviceType": "auxNetDevice", "selectors": [{"auxTypes": ["sf"]}]}]}),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_every_selector_form_the_webhook_accepts_passes(name: str) -> None:
    """Item 14: the policy agreed with the old hand-written key list, not with the operator's schemas."""
    assert violations("rdma-plugin-selects-devices", [ACCEPTED[name]]) == []


@pytest.mark.parametrize("config, wanted", [
    (_policy(shared={"configList": [{"resourceName": "shared_ib", "rdmaHcaMax": 63}]}), "neither devices"),
    (_policy(shared={"configList": [{"resourceName": "shared_ib", "rdmaHcaMax": 63,
                                     "selectors": {"pciAddresses": ["0000:18:00.0"]}}]}), "neither devices"),
    (_policy(sriov={"resourceList": [{"resourceName": "ib", "deviceType": "accelerator",
                                      "selectors": [{"pfNames": ["ibp24s0"]}]}]}), "accelerator selector"),
    (_policy(sriov={"resourceList": []}), "lists no resource"),
])
def test_what_the_webhook_refuses_is_flagged(config: dict[str, Any], wanted: str) -> None:
    [violation] = violations("rdma-plugin-selects-devices", [config])
    assert wanted in violation.message


def _exporter(limit: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "nvidia-dcgm-exporter"},
            "spec": {"template": {"spec": {"containers": [{
                "name": "nvidia-dcgm-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless",
                "resources": {"limits": {"memory": limit}}}]}}}}


def test_the_exporter_needs_dcgm_exporters_own_limit_whatever_the_gpu_count() -> None:
    """Item 15: dcgm-exporter's chart (deployment/values.yaml) limits it to 512Mi and users see 400-500 MiB with
    one GPU; 80 MiB per GPU let a 256Mi limit through on a one-GPU fleet."""
    [violation] = violations("exporter-memory-fits-the-gpus", [_exporter("256Mi")])
    assert "512 MiB" in violation.message
    assert violations("exporter-memory-fits-the-gpus", [_exporter("512Mi")]) == []
    # the floor needs no fleet facts: the pack judges it with no policy config
    assert violations("exporter-memory-fits-the-gpus", [_exporter("256Mi")], PolicyContext()) != []


def test_one_gibibyte_is_enough_for_ofed_as_the_policy_says() -> None:
    """Item 15: `1Gi` reads as 1024 MiB, the value the OFED remediation tells users to set."""
    ncp = {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "metadata": {"name": "ncp"},
           "spec": {"ofedDriver": {"containerResources": [{"name": "mofed-container", "limits": {"memory": "1Gi"}}]}}}
    assert violations("ofed-memory-fits-the-compile", [ncp]) == []
    low = copy.deepcopy(ncp)
    low["spec"]["ofedDriver"]["containerResources"][0]["limits"]["memory"] = "1G"
    assert len(violations("ofed-memory-fits-the-compile", [low])) == 1


def _rdma_pod(*asks: str, init: str | None = None) -> dict[str, Any]:
    def container(name: str, count: str) -> dict[str, Any]:
        return {"name": name, "image": "ubuntu:24.04", "resources": {"limits": {"rdma/ib": count}},
                "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}
    spec: dict[str, Any] = {"containers": [container(f"c{i}", n) for i, n in enumerate(asks)]}
    if init is not None:
        spec["initContainers"] = [container("init", init)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rdma"}, "spec": spec}


@pytest.mark.parametrize("pod, flagged", [
    (_rdma_pod("4", "4"), False),
    (_rdma_pod("5", "5"), True),  # 10 rdma/ib on an 8-NIC node: the scheduler sums the containers
    (_rdma_pod("2", init="9"), True),  # an init container runs alone, but still asks for 9
    (_rdma_pod("6", init="4"), False),
])
def test_rdma_asks_are_summed_over_containers(pod: dict[str, Any], flagged: bool) -> None:
    """Item 15: the scheduler's pod request (k8s.io/component-helpers resource.PodRequests) sums the containers
    and takes the larger of that and each init container's; the policy took the largest container's."""
    assert bool(violations("rdma-within-infiniband-nics", [pod])) is flagged


def _gpu_pod(tolerations: list[dict[str, str]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu"},
            "spec": {"tolerations": tolerations, "containers": [
                {"name": "c", "image": "ubuntu:24.04", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def test_a_toleration_must_match_the_taints_effect() -> None:
    """Item 15: a toleration with another effect does not tolerate the taint (TaintToleration's ToleratesTaint),
    and a pool whose only taint is PreferNoSchedule keeps no pod off (the filter checks NoSchedule and
    NoExecute)."""
    wrong = _gpu_pod([{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoExecute"}])
    assert len(violations("gpu-pods-tolerate-a-gpu-pool", [wrong])) == 1
    right = _gpu_pod([{"key": "sku", "operator": "Exists", "effect": "NoSchedule"}])
    assert violations("gpu-pods-tolerate-a-gpu-pool", [right]) == []
    preferred = PolicyContext(pool_taints=(({**TAINT, "effect": "PreferNoSchedule"},),))
    assert violations("gpu-pods-tolerate-a-gpu-pool", [_gpu_pod([])], preferred) == []
