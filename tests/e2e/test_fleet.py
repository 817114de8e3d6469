"""The e2e fleet for real: apply, DaemonSet placement, the agents under their rendered RBAC, then delete.

The fleet config (an ND H100 v5 pool and an ND A100 v4 MIG pool) is rendered and server-side applied for real to
the control plane, whose simulated nodes carry what the pools give them, beside a CPU node and a GPU node outside
any pool. The tests then run in this order on the same objects:

1. every DaemonSet's pods land on exactly the nodes its selector picks and whose taints it tolerates;
2. each agent that calls the API (feature discovery, validator, node status exporter, and the metrics exporter,
   which reads pods for their labels in this fleet) runs as a local process with a token of the service account
   its DaemonSet runs as: what it must publish is there, the API server answered none of its requests with 403,
   and every rule it is granted was used by some request (a grant no request used fails the test: the rendered
   RBAC is exactly enough); feature discovery runs twice, the second time over objects others changed, so its
   update, conflict and delete paths make their calls;
3. applying the same render again changes no object (no perpetual diff), and a config change (time-slicing on)
   changes exactly the objects whose render changed, adds the new ones, and removes the ones it no longer renders;
4. deleting every object leaves nothing of ours behind and no namespace Terminating (the garbage collector and
   the namespace controller do their part, as `pulumi destroy` relies on them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, Client
from lightkube.resources.core_v1 import Namespace, Pod

from gpu_operator.agents.feature_discovery.gpu_devices import NODE_LABEL, gpu_device_object
from gpu_operator.agents.feature_discovery.node_feature import node_feature_name
from gpu_operator.agents.nvml import open_nvml
from gpu_operator.config import GpuStackConfig, parse_config
from gpu_operator.render import render
from tests.agents.kubelet.fake_kubelet import container as kubelet_container
from tests.agents.kubelet.fake_kubelet import fake_kubelet
from tests.agents.kubelet.fake_kubelet import pod as kubelet_pod
from tests.e2e.agents import container, daemonset, pod_on_node, rendered_env, run_agent, service_account_token
from tests.e2e.apply import KindTable, object_id, server_side_apply, wait_established
from tests.e2e.control_plane import ControlPlane
from tests.e2e.nodes import BARE_GPU_NODE, CPU_NODE, FLEET_CONFIG, SimulatedNode
from tests.e2e.placement import expected_nodes
from tests.e2e.rbac import audited_requests, forbidden, granted_rules, unused_grants
from tests.e2e.report import note
from tests.e2e.scrape import run_exporter_until, run_metrics_exporter_until
from tests.e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

Object = dict[str, Any]
#: Simulated GPU per pool (the agents' fake NVML profiles).
NVML_PROFILES = {"h100": "fake:h100-8x", "a100mig": "fake:a100-8x-mig"}
#: The config change of the update test: time-slicing on, every GPU advertised twice.
TIME_SLICING = {
    "operator": {"devicePlugin": {"config": {"name": "time-slicing-config", "default": "shared-2"}}},
    "configs": {"devicePlugin": {"shared-2": {
        "version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}},
    }}},
}


@pytest.fixture(scope="module")
def deployed(admin: Client, kinds: KindTable, fleet: list[SimulatedNode], fleet_config: GpuStackConfig) -> Iterator[list[Object]]:
    objects = render(fleet_config)
    table = KindTable(custom=dict(kinds.custom))
    table.learn(objects)
    failures = server_side_apply(admin, objects, table, dry_run=False, field_manager="e2e-fleet")
    assert not failures, "the API server refused:\n" + "\n".join(map(str, failures))
    wait_established(admin, [obj["metadata"]["name"] for obj in objects if obj["kind"] == "CustomResourceDefinition"])
    yield objects
    _delete_all(admin, objects, table)


def _delete_all(admin: Client, objects: list[Object], table: KindTable) -> None:
    for obj in reversed(objects):
        try:
            admin.delete(table.resource(obj), obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"))
        except ApiError as error:
            if error.status.code not in (404, 409):  # gone, or a namespace already Terminating
                raise


def _list(admin: Client, resource: type, **where: Any) -> list[Any]:
    """List, retrying while a just-created resource's storage is still initializing (429) - bounded."""
    result: list[Any] = []

    def listed() -> bool:
        try:
            result[:] = list(admin.list(resource, **where))
        except ApiError as error:
            if error.status.code != 429:
                raise
            return False
        return True

    wait_until(listed, timeout=30, what=f"the API server to serve {resource.__name__}")
    return result


def _pod_nodes(admin: Client, ds: Object) -> dict[str, str]:
    """node -> phase of the DaemonSet's pods."""
    pods = admin.list(Pod, namespace=ds["metadata"]["namespace"])
    return {
        pod.spec.nodeName or "": pod.status.phase if pod.status else ""
        for pod in pods
        if any(ref.kind == "DaemonSet" and ref.name == ds["metadata"]["name"] for ref in pod.metadata.ownerReferences or [])
    }


def test_daemonset_pods_land_on_exactly_the_selected_and_tolerating_nodes(
    admin: Client, deployed: list[Object], fleet: list[SimulatedNode]
) -> None:
    daemonsets = [obj for obj in deployed if obj["kind"] == "DaemonSet"]
    expected = {ds["metadata"]["name"]: expected_nodes(ds, fleet) for ds in daemonsets}
    gpu_pool_nodes = {node.name for node in fleet if node.pool in NVML_PROFILES}
    assert expected["nvidia-driver-daemonset"] == gpu_pool_nodes, "the driver must run on every pool GPU node"

    def settled() -> bool:
        return all(
            set(pods) == expected[ds["metadata"]["name"]] and set(pods.values()) <= {"Running"}
            for ds in daemonsets
            for pods in [_pod_nodes(admin, ds)]
        )

    try:
        wait_until(settled, timeout=120, what="every DaemonSet's pods to run on the expected nodes")
    except TimeoutError:
        actual = {ds["metadata"]["name"]: _pod_nodes(admin, ds) for ds in daemonsets}
        diff = {name: (sorted(expected[name]), actual[name]) for name in expected if set(actual[name]) != expected[name]}
        pytest.fail(f"DaemonSet pods (expected nodes, actual node -> phase): {diff}")
    for ds in daemonsets:
        placed = set(_pod_nodes(admin, ds))
        assert CPU_NODE not in placed and BARE_GPU_NODE not in placed, ds["metadata"]["name"]
    mig_pool = {node.name for node in fleet if node.pool == "a100mig"}
    assert mig_pool <= set(_pod_nodes(admin, daemonset(deployed, "nvidia-mig-manager")))
    assert not _pod_nodes(admin, daemonset(deployed, "nvidia-device-plugin-mps-control-daemon"))


def _check_rbac(plane: ControlPlane, objects: list[Object], namespace: str, account: str, agent: str) -> None:
    requests = audited_requests(plane.audit_events(f"system:serviceaccount:{namespace}:{account}"))
    assert requests, f"{agent} made no API request as {account}"
    refused = forbidden(requests)
    assert not refused, f"{agent} lacks rules in the rendered RBAC of {account}:\n" + "\n".join(map(str, refused))
    unused = unused_grants(granted_rules(objects, namespace, account), requests)
    assert not unused, (f"the rendered RBAC of {account} grants what {agent} never asked for (narrow the rule, or "
                        "exercise the code path that needs it):\n" + "\n".join(unused))
    note(f"{agent} as {namespace}/{account}: {len(requests)} requests, none refused, every grant used")


def _gpu_node(fleet: list[SimulatedNode], pool: str) -> SimulatedNode:
    return next(node for node in fleet if node.pool == pool)


@pytest.mark.parametrize("pool", sorted(NVML_PROFILES))
def test_feature_discovery_publishes_node_feature_and_gpu_devices_with_its_rendered_rbac(
    pool: str, admin: Client, control_plane: ControlPlane, deployed: list[Object], fleet: list[SimulatedNode],
    kinds: KindTable, tmp_path: Path,
) -> None:
    node = _gpu_node(fleet, pool)
    ds = daemonset(deployed, "gpu-feature-discovery")
    spec, pod = container(ds, "gpu-feature-discovery"), pod_on_node(admin, ds, node.name)
    namespace, account = pod.metadata.namespace, pod.spec.serviceAccountName
    env = rendered_env(spec, pod)
    machine_type = tmp_path / "product_name"
    machine_type.write_text(node.labels["node.kubernetes.io/instance-type"] + "\n")
    env.update({"GPU_OPERATOR_NVML": NVML_PROFILES[pool], "GFD_ONESHOT": "true",
                "GFD_MACHINE_TYPE_FILE": str(machine_type)})
    token = service_account_token(admin, namespace, account)
    run = run_agent(control_plane, "feature-discovery", env, token, tmp_path)
    assert run.returncode == 0, run.output

    table = KindTable(custom=dict(kinds.custom))
    table.learn(deployed)
    # a restarted agent finds what others changed: every call its RBAC grants is then made once
    stale = _drift_published_objects(admin, table, namespace, node.name, NVML_PROFILES[pool])
    run = run_agent(control_plane, "feature-discovery", env, token, tmp_path)
    assert run.returncode == 0, run.output
    node_feature = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature"}
    features = [f for f in _list(admin, table.resource(node_feature), namespace=namespace)
                if (f.get("metadata", {}).get("labels") or {}).get("nfd.node.kubernetes.io/node-name") == node.name]
    assert len(features) == 1, f"expected one NodeFeature for {node.name}, found {len(features)}\n{run.output}"
    labels = features[0]["spec"]["labels"]
    assert labels.get("nvidia.com/gpu.product"), labels
    if pool == "a100mig":  # single strategy: every MIG device counts as a GPU (7 x 1g.5gb per A100)
        assert labels.get("nvidia.com/mig.strategy") == "single", labels
        assert int(labels["nvidia.com/gpu.count"]) == 8 * 7, labels
    else:
        assert labels.get("nvidia.com/gpu.count") == "8", labels
    gpu_device = {"apiVersion": "gpu.pulumi-gpu-operator.io/v1alpha1", "kind": "GpuDevice"}
    devices = [d for d in _list(admin, table.resource(gpu_device))
               if any(ref.get("name") == node.name for ref in d["metadata"].get("ownerReferences") or [])]
    assert len(devices) == 8, f"expected 8 GpuDevice objects owned by {node.name}, found {len(devices)}\n{run.output}"
    assert all(d["metadata"]["labels"].get(NODE_LABEL) == node.name for d in devices), run.output
    assert stale not in {d["metadata"]["name"] for d in _list(admin, table.resource(gpu_device))}, run.output
    _check_rbac(control_plane, deployed, namespace, account, "feature-discovery")


def _drift_published_objects(admin: Client, table: KindTable, namespace: str, node: str, profile: str) -> str:
    """Change what feature discovery published, as a restart may find it: a stale label in the NodeFeature (the
    agent updates it), one GpuDevice without the node label (so its create is refused as existing, and the agent
    reads and updates it) and one GpuDevice of a GPU the node no longer has (the agent deletes it). Returns the
    name of that one."""
    nvml = open_nvml(profile)
    system, gpu = nvml.system(), nvml.devices()[0]
    feature = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
               "metadata": {"name": node_feature_name(node), "namespace": namespace},
               "spec": {"labels": {"nvidia.com/gpu.product": "drifted"}}}
    unlabelled = gpu_device_object(node, system, gpu)
    unlabelled["metadata"]["labels"] = {}
    unlabelled["spec"]["product"] = "drifted"
    gone = gpu_device_object(node, system, gpu)
    gone["metadata"]["name"] = f"{node}-gpu-gone"
    gone["spec"]["uuid"] = "GPU-00000000-0000-0000-0000-000000000000"
    admin.delete(table.resource(unlabelled), unlabelled["metadata"]["name"])
    wait_until(lambda: not _exists(admin, table, unlabelled), timeout=30, what="the GpuDevice to be deleted")
    failures = server_side_apply(admin, [feature, unlabelled, gone], table, dry_run=False, field_manager="e2e-drift")
    assert not failures, failures
    return gone["metadata"]["name"]


def _exists(admin: Client, table: KindTable, obj: Object) -> bool:
    try:
        admin.get(table.resource(obj), obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"))
    except ApiError as error:
        if error.status.code == 404:
            return False
        raise
    return True


@pytest.mark.parametrize("component", ["plugin", "cuda"])  # the plugin check also reads the node
def test_validator_runs_its_workload_pods_with_its_rendered_rbac(
    component: str, admin: Client, control_plane: ControlPlane, deployed: list[Object], fleet: list[SimulatedNode],
    tmp_path: Path,
) -> None:
    node = _gpu_node(fleet, "a100mig" if component == "plugin" else "h100")
    ds = daemonset(deployed, "nvidia-operator-validator")
    spec, pod = container(ds, f"{component}-validation"), pod_on_node(admin, ds, node.name)
    namespace, account = pod.metadata.namespace, pod.spec.serviceAccountName
    env = rendered_env(spec, pod)
    # The operator runs the plugin check without a workload; run it with one, so the pod path is covered too.
    env.update({"WITH_WORKLOAD": "true", "OUTPUT_DIR": str(tmp_path / "validations"),
                "GPU_OPERATOR_NVML": NVML_PROFILES[node.pool or ""]})
    run = run_agent(control_plane, "validator", env, service_account_token(admin, namespace, account), tmp_path)
    assert run.returncode == 0, run.output
    assert (tmp_path / "validations" / f"{component}-ready").exists(), run.output
    requests = audited_requests(control_plane.audit_events(f"system:serviceaccount:{namespace}:{account}"))
    assert any(r.verb == "create" and r.resource == "pods" and r.code == 201 for r in requests), requests
    _check_rbac(control_plane, deployed, namespace, account, f"validator ({component})")


def test_node_status_exporter_reads_the_node_with_its_rendered_rbac(
    admin: Client, control_plane: ControlPlane, deployed: list[Object], fleet: list[SimulatedNode], tmp_path: Path,
) -> None:
    node = _gpu_node(fleet, "h100")
    ds = daemonset(deployed, "nvidia-node-status-exporter")
    spec, pod = container(ds, "nvidia-node-status-exporter"), pod_on_node(admin, ds, node.name)
    namespace, account = pod.metadata.namespace, pod.spec.serviceAccountName
    env = rendered_env(spec, pod)
    env.update({"GPU_OPERATOR_NVML": NVML_PROFILES["h100"], "OUTPUT_DIR": str(tmp_path / "validations")})
    token = service_account_token(admin, namespace, account)
    value, output = run_exporter_until(
        control_plane, env, token, tmp_path, metric="gpu_operator_node_device_plugin_devices_total", want=8.0,
    )
    assert value == 8.0, output
    _check_rbac(control_plane, deployed, namespace, account, "node-status-exporter")


def test_metrics_exporter_labels_a_pods_gpu_series_with_its_rendered_rbac(
    admin: Client, control_plane: ControlPlane, deployed: list[Object], fleet: list[SimulatedNode], tmp_path: Path,
) -> None:
    node = _gpu_node(fleet, "h100")
    workload = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "trainer", "namespace": "default", "labels": {"team": "ml-platform"}},
        "spec": {
            "nodeName": node.name,
            "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": "trainer:1",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }
    failures = server_side_apply(admin, [workload], KindTable(), dry_run=False)
    assert not failures, failures
    gpu = open_nvml(NVML_PROFILES["h100"]).devices()[0].uuid
    ds = daemonset(deployed, "nvidia-dcgm-exporter")
    spec, pod = container(ds, "nvidia-dcgm-exporter"), pod_on_node(admin, ds, node.name)
    namespace, account = pod.metadata.namespace, pod.spec.serviceAccountName
    assert pod.spec.automountServiceAccountToken is not False, "the exporter reads pods, so it needs its token"
    env = rendered_env(spec, pod)
    env["GPU_OPERATOR_NVML"] = NVML_PROFILES["h100"]  # the rendered collectors path falls back to the packaged list
    token = service_account_token(admin, namespace, account)

    def labelled(samples: list[Any]) -> bool:
        return any(s.labels.get("pod") == "trainer" and "ml-platform" in s.labels.values() for s in samples)

    with fake_kubelet([kubelet_pod("trainer", "default", kubelet_container("main", ("nvidia.com/gpu", [gpu])))]) as kubelet:
        env["DCGM_POD_RESOURCES_KUBELET_SOCKET"] = kubelet.socket_path
        samples, output = run_metrics_exporter_until(control_plane, env, token, tmp_path, found=labelled)
    assert labelled(samples), f"no series of GPU {gpu} carries the pod and its labels\n{output}"
    _check_rbac(control_plane, deployed, namespace, account, "metrics-exporter")


def _key(obj: Object) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace") or "", meta["name"]


def _versions(admin: Client, table: KindTable, objects: list[Object]) -> dict[tuple[str, str, str, str], str]:
    """Per object: its generation where it has one (controllers keep writing the status of DaemonSets), else its
    resourceVersion - what moves only when someone changes the object's desired state."""
    versions = {}
    for obj in objects:
        live = admin.get(table.resource(obj), obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"))
        meta = live["metadata"] if isinstance(live, dict) else live.metadata.to_dict()
        versions[_key(obj)] = str(meta.get("generation") or meta["resourceVersion"])
    return versions


def test_applying_the_same_render_again_changes_nothing(
    admin: Client, deployed: list[Object], kinds: KindTable
) -> None:
    table = KindTable(custom=dict(kinds.custom))
    table.learn(deployed)
    before = _versions(admin, table, deployed)
    failures = server_side_apply(admin, deployed, table, dry_run=False, field_manager="e2e-fleet")
    assert not failures, "\n".join(map(str, failures))
    after = _versions(admin, table, deployed)
    changed = sorted(f"{key[1]} {key[3]}" for key, version in after.items() if before[key] != version)
    assert not changed, f"re-applying an unchanged render changed: {changed}"


def test_a_config_change_updates_exactly_what_its_render_changes(
    admin: Client, deployed: list[Object], kinds: KindTable
) -> None:
    document = yaml.safe_load(FLEET_CONFIG.read_text())
    document["operator"] = {**document["operator"], **TIME_SLICING["operator"]}
    document["configs"] = TIME_SLICING["configs"]
    updated = render(parse_config(document, source="fleet + time-slicing"))
    old = {_key(obj): obj for obj in deployed}
    new = {_key(obj): obj for obj in updated}
    expected_changed = {key for key in old.keys() & new.keys() if old[key] != new[key]}
    added, removed = new.keys() - old.keys(), old.keys() - new.keys()
    assert expected_changed or added, "turning time-slicing on changed nothing in the render"

    table = KindTable(custom=dict(kinds.custom))
    table.learn(deployed)
    table.learn(updated)
    kept = [new[key] for key in old.keys() & new.keys()]
    before = _versions(admin, table, kept)
    failures = server_side_apply(admin, updated, table, dry_run=False, field_manager="e2e-fleet")
    assert not failures, "\n".join(map(str, failures))
    _delete_all(admin, [old[key] for key in removed], table)
    after = _versions(admin, table, kept)
    changed = {key for key in before if before[key] != after[key]}
    assert changed == expected_changed, {
        "changed but not in the render diff": sorted(changed - expected_changed),
        "in the render diff but unchanged": sorted(expected_changed - changed),
    }
    assert all(_versions(admin, table, [new[key]]) for key in added)
    note(f"time-slicing on: {len(changed)} objects updated ({', '.join(sorted(k[3] for k in changed))}), "
          f"{len(added)} added ({', '.join(sorted(k[3] for k in added))}), {len(removed)} removed")
    deployed[:] = [*updated, *(old[key] for key in removed)]


def test_deleting_every_object_leaves_nothing_behind(
    admin: Client, deployed: list[Object], kinds: KindTable
) -> None:
    table = KindTable(custom=dict(kinds.custom))
    table.learn(deployed)
    _delete_all(admin, deployed, table)
    namespaces = {obj["metadata"]["name"] for obj in deployed if obj["kind"] == "Namespace"}

    def gone(obj: Object) -> bool:
        try:
            admin.get(table.resource(obj), obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"))
        except ApiError as error:
            return error.status.code == 404
        return False

    def all_gone() -> bool:
        return all(gone(obj) for obj in deployed) and not any(
            ns.metadata.name in namespaces for ns in admin.list(Namespace)
        )

    try:
        wait_until(all_gone, timeout=120, what="every object and namespace to be deleted")
    except TimeoutError:
        left = [object_id(obj) for obj in deployed if not gone(obj)]
        terminating = [ns.metadata.name for ns in admin.list(Namespace) if ns.metadata.name in namespaces]
        pytest.fail(f"left behind: {left}; namespaces still there (Terminating): {terminating}")
