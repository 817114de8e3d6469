"""DRA against the real API server (1.36) with KWOK: our objects are accepted, and the scheduler allocates claims.

The node of the DRA example's `h100dra` pool is registered with the labels our render gives the pool
(`nvidia.com/dra-kubelet-plugin=true`, `nvidia.com/gpu.deploy.device-plugin=false`) and no `nvidia.com/gpu`
capacity; the ResourceSlice NVIDIA's DRA driver would publish on it is the one `gpu-operator dra match` previews
from a simulated 8x H100 node. The chart cannot be pulled here, so the DeviceClasses are our rendering of the
chart's (the same names and CEL), and the ComputeDomain CRDs come from the shared reference data.

The scheduler in this control plane runs the DRA plugin (DynamicResourceAllocation is GA since 1.34): a pod naming
a claim template gets a claim from the resource-claim controller, and the scheduler allocates it against our
slice, honouring `matchAttribute: resource.kubernetes.io/pcieRoot`. Our offline verdict (`dra match`) must agree
with the scheduler's, both for a claim that fits and one that does not.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.resource_v1 import ResourceClaim, ResourceSlice

from gpu_operator.config import GpuStackConfig, load_config
from gpu_operator.dra.match import match_claim
from gpu_operator.dra.slices import PublishedDevice, resource_slice
from gpu_operator.render.dra import device_classes, dra_objects
from gpu_operator.workloads.dra import PodClaim, Request, claim_template, pod
from tests.dra.cel_corpus import simulated_node_devices
from tests.e2e.apply import KindTable, ensure_namespaces, server_side_apply
from tests.e2e.nodes import fleet_nodes, node_object
from tests.e2e.report import note
from tests.e2e.waiting import wait_until
from tests.support.reference import REPO_ROOT

pytestmark = pytest.mark.e2e

CONFIG = REPO_ROOT / "examples" / "configs" / "dra.yaml"
EXAMPLES = REPO_ROOT / "examples" / "workloads" / "dra"
NAMESPACE = "dra-e2e"
TOLERATION = [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]


@pytest.fixture(scope="module")
def dra_config() -> GpuStackConfig:
    return load_config(CONFIG)


@pytest.fixture(scope="module")
def devices() -> list[PublishedDevice]:
    return simulated_node_devices()


@pytest.fixture(scope="module")
def dra_node(admin: Client, kinds: KindTable, dra_config: GpuStackConfig, devices: list[PublishedDevice]
             ) -> Iterator[str]:
    """The first node of the h100dra pool, Ready, with its ResourceSlice and the driver's DeviceClasses."""
    [node] = [n for n in fleet_nodes(dra_config) if n.pool == "h100dra"][:1]
    node = dataclasses.replace(node, gpus=None)  # DRA nodes advertise no nvidia.com/gpu
    assert node.labels["nvidia.com/dra-kubelet-plugin"] == "true"
    assert node.labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    table = KindTable()
    objects = [node_object(node), resource_slice(node.name, devices), *device_classes()]
    failures = server_side_apply(admin, objects, table, dry_run=False)
    assert not failures, "\n".join(map(str, failures))

    def ready() -> bool:
        status = admin.get(Node, node.name).status
        return any(c.type == "Ready" and c.status == "True" for c in (status.conditions or [])) if status else False

    wait_until(ready, timeout=60, what=f"KWOK to report {node.name} Ready")
    ensure_namespaces(admin, [{"kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    try:
        yield node.name
    finally:
        admin.delete(ResourceSlice, objects[1]["metadata"]["name"])
        admin.delete(Node, node.name)


def test_the_api_server_accepts_our_dra_objects(admin: Client, kinds: KindTable, dra_node: str,
                                                dra_config: GpuStackConfig) -> None:
    examples = [doc for path in sorted(EXAMPLES.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]
    objects = [*dra_objects(dra_config), *examples]
    ensure_namespaces(admin, objects)
    failures = server_side_apply(admin, objects, kinds, dry_run=True)
    assert not failures, "the API server refused:\n" + "\n".join(map(str, failures))
    note(f"DRA: {len(objects)} objects (claim templates of the config, the workload examples with a ComputeDomain) "
         "accepted by the API server (dry run), 5 DeviceClasses and a ResourceSlice created")


def _pod_for(admin: Client, template: dict[str, Any], node: str) -> dict[str, Any]:
    manifest = pod(f"uses-{template['metadata']['name']}", NAMESPACE, "busybox",
                   [PodClaim("gpus", "template", template["metadata"]["name"])], command=("true",),
                   tolerations=TOLERATION, node_selector={"kubernetes.io/hostname": node})
    failures = server_side_apply(admin, [template, manifest], KindTable(), dry_run=False)
    assert not failures, "\n".join(map(str, failures))
    return manifest


def _claim_of(admin: Client, pod_name: str) -> ResourceClaim | None:
    status = admin.get(Pod, pod_name, namespace=NAMESPACE).status
    for claim in (status.resourceClaimStatuses or []) if status else []:
        if claim.resourceClaimName:
            return admin.get(ResourceClaim, claim.resourceClaimName, namespace=NAMESPACE)
    return None


def test_the_scheduler_allocates_two_gpus_under_one_pcie_root(admin: Client, dra_node: str,
                                                              devices: list[PublishedDevice]) -> None:
    template = claim_template("two-gpus-e2e", NAMESPACE, [Request("gpus", count=2)], same_pcie_root=True)
    offline = match_claim(template, devices)
    assert offline.allocation is not None
    manifest = _pod_for(admin, template, dra_node)
    name = manifest["metadata"]["name"]

    def allocated() -> bool:
        claim = _claim_of(admin, name)
        return claim is not None and claim.status is not None and claim.status.allocation is not None

    wait_until(allocated, timeout=60, what="the scheduler to allocate the pod's claim")
    claim = _claim_of(admin, name)
    assert claim is not None and claim.status is not None and claim.status.allocation is not None
    results = claim.status.allocation.devices.results
    assert {r.driver for r in results} == {"gpu.nvidia.com"} and len(results) == 2
    roots = {d.name: d.attributes["resource.kubernetes.io/pcieRoot"] for d in devices}
    assert len({roots[r.device] for r in results}) == 1
    wait_until(lambda: admin.get(Pod, name, namespace=NAMESPACE).spec.nodeName == dra_node, timeout=60,
               what="the pod to be bound to the DRA node")
    note(f"DRA: the scheduler allocated {', '.join(r.device for r in results)} (one PCIe root) for {name}; "
         f"dra match offline chose {', '.join(offline.allocation['gpus'])}")
    admin.delete(Pod, name, namespace=NAMESPACE, grace_period=0)


def test_a_claim_that_does_not_fit_stays_unschedulable_as_dra_match_says(admin: Client, dra_node: str,
                                                                       devices: list[PublishedDevice]) -> None:
    template = claim_template("five-gpus-e2e", NAMESPACE, [Request("gpus", count=5)], same_pcie_root=True)
    assert match_claim(template, devices).allocation is None
    manifest = _pod_for(admin, template, dra_node)
    name = manifest["metadata"]["name"]

    def unschedulable() -> bool:
        status = admin.get(Pod, name, namespace=NAMESPACE).status
        return any(c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
                   for c in (status.conditions or [])) if status else False

    wait_until(unschedulable, timeout=60, what="the scheduler to report the pod Unschedulable")
    claim = _claim_of(admin, name)
    assert claim is None or claim.status is None or claim.status.allocation is None
    with contextlib.suppress(ApiError):  # cleanup only
        admin.delete(Pod, name, namespace=NAMESPACE, grace_period=0)
