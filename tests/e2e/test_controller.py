"""The operator controller against a real API server: 100 KWOK GPU nodes labelled, then a driver rollout.

The controller labels every node, so this module runs on a control plane of its own (the session's fleet keeps
its labels). The fleet config is rendered with the controller and its objects applied: the controller's
ServiceAccount, RBAC and settings, and the driver and validator DaemonSets. 100 KWOK nodes carry only NFD's PCI
label and one GPU pod each. The controller runs as a local process with a token of its rendered ServiceAccount.

1. Labelling: every node gets `gpu.present` and the deploy labels, and then the operands' pods (the DaemonSets
   select those labels) - a cluster without our AKS pools gets its operands.
2. Rollout: the driver version changes (the DaemonSet gets a new template). A watcher samples the nodes all along:
   never more than `maxParallelUpgrades` in progress, never more than `maxUnavailable` cordoned. Injected faults:
   a node whose validator pod never turns Ready (KWOK stage `kwok-stages/validator-never-ready.yaml`; a node
   with no validator pod at all would wait untimed, as NVIDIA's validation manager waits), a GPU pod a
   PodDisruptionBudget protects, and a node deleted mid-upgrade. Those two nodes end `upgrade-failed` with a
   reason, the deleted one is gone, every other node is `upgrade-done` on the new driver and schedulable. One
   node's GPU pod holds its GPU through a DRA ResourceClaim (allocated by `gpu.nvidia.com`) instead of
   `nvidia.com/gpu`: it is evicted like the others.
3. The API server refused none of the controller's requests; its status ConfigMap and metrics tell the result.
4. Slow drivers, on a control plane of their own (KWOK stage `kwok-stages/slow-driver.yaml`), at
   maxParallelUpgrades 1: a new driver pod that is Running but not Ready for a few restarts, then one that
   crash-loops. No node is validated or uncordoned before its new driver pod is Ready (NVIDIA's
   isDriverPodInSync), the crash-looping node fails after more than 10 restarts, and it then holds every further
   admission (a failed node counts as in progress): the bad driver reaches no other node.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from gpu_operator.components.driver_rollout import DriverRolloutProvider
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap, Node, Pod
from lightkube.resources.resource_v1 import ResourceClaim
from lightkube.types import PatchType

from tests.e2e.apply import KindTable, server_side_apply
from tests.e2e.control_plane import ControlPlane, running_control_plane, stop_process_group
from tests.e2e.controller_fleet import (
    DELETED_NODE,
    DRA_NODE,
    IN_PROGRESS,
    MAX_PARALLEL,
    MAX_UNAVAILABLE,
    NAMESPACE,
    NO_VALIDATION,
    NODES,
    PDB_NODE,
    SCALE,
    STATE,
    Watcher,
    controller_objects,
    gpu_node,
    gpu_pod,
    histogram,
    log_tail,
    node_map,
    pods_of,
    start_controller,
)
from tests.e2e.rbac import audited_requests, forbidden, granted_rules, unused_grants
from tests.e2e.report import note
from tests.e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

Object = dict[str, Any]


@pytest.fixture(scope="module")
def plane(e2e_tools: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(e2e_tools, tmp_path_factory.mktemp("controller-plane")) as plane:
        yield plane


def _allocated_claim(client: Client, node: str) -> None:
    """The ResourceClaim of the DRA node's pod, allocated by NVIDIA's DRA driver (as its scheduler plugin would)."""
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": f"gpu-{node}", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
    assert not server_side_apply(client, [claim], KindTable(), dry_run=False, field_manager="e2e-controller")
    status = {"status": {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": "gpu-0"}]}}}}
    client.patch(ResourceClaim.Status, f"gpu-{node}", status, namespace="default",
                 patch_type=PatchType.MERGE)


@pytest.fixture(scope="module")
def cluster(plane: ControlPlane) -> Client:
    admin = plane.client()
    table = KindTable()
    objects = controller_objects("595.91.07")
    nodes = [gpu_node(i) for i in range(NODES)]
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "protect-training", "namespace": "default"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": f"train-{PDB_NODE}"}}}}
    failures = server_side_apply(admin, [*objects, *nodes, pdb], table, dry_run=False, field_manager="e2e-controller")
    assert not failures, "\n".join(map(str, failures))
    _allocated_claim(admin, DRA_NODE)
    failures = server_side_apply(admin, [gpu_pod(n["metadata"]["name"]) for n in nodes], table, dry_run=False,
                                 field_manager="e2e-controller")
    assert not failures, "\n".join(map(str, failures))
    return admin


@pytest.fixture(scope="module")
def controller(plane: ControlPlane, cluster: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    process = start_controller(plane, cluster, tmp_path_factory.mktemp("controller"))
    try:
        yield process
    finally:
        stop_process_group(process)


def _wait_for_rollout(plane: ControlPlane) -> dict[str, Any]:
    props = {"kubeconfig": plane.admin_kubeconfig.read_text(), "namespace": NAMESPACE, "driverDigest": "d",
             "timeoutSeconds": 60, "pollSeconds": 1}
    return DriverRolloutProvider()._wait(props)


def test_nodes_with_only_nfds_label_get_the_deploy_labels_then_the_operands(plane: ControlPlane, cluster: Client,
                                                                             controller: Any) -> None:
    def labelled() -> bool:
        assert controller.poll() is None, log_tail(controller)
        nodes = node_map(cluster)
        return len(nodes) == NODES and all(
            (n.metadata.labels or {}).get("nvidia.com/gpu.deploy.driver") == "true" for n in nodes.values())

    started = time.monotonic()
    wait_until(labelled, timeout=90 * SCALE, what=f"the controller to label {NODES} nodes")
    labelled_after = time.monotonic() - started
    wait_until(lambda: len([p for p in pods_of(cluster, "nvidia-driver-daemonset") if p.status.phase == "Running"])
               == NODES, timeout=180 * SCALE, what="a driver pod Running on every node")
    wait_until(lambda: all((n.metadata.labels or {}).get(STATE) == "upgrade-done" for n in node_map(cluster).values()),
               timeout=120 * SCALE, what="every node to start upgrade-done")
    node = node_map(cluster)["gpu-000"]
    labels = node.metadata.labels
    assert labels["nvidia.com/gpu.present"] == "true" and labels["nvidia.com/gpu.deploy.client"] == "true"
    assert node.metadata.annotations["nvidia.com/gpu-driver-upgrade-enabled"] == "true"
    note(f"controller: {NODES} nodes with only NFD's PCI label labelled in {labelled_after:.1f} s; driver pods followed")
    # what `pulumi up` runs with controller.waitForDriverRollout: the fleet is on the DaemonSet's newest template
    assert _wait_for_rollout(plane)["upgradedNodes"] == NODES
    assert controller.poll() is None, log_tail(controller)


def _requests(plane: ControlPlane) -> list[Any]:
    return audited_requests(plane.audit_events(f"system:serviceaccount:{NAMESPACE}:gpu-operator"))


def test_a_driver_version_change_rolls_out_within_the_limits(plane: ControlPlane, cluster: Client,
                                                             controller: Any) -> None:
    writes_before = len([r for r in _requests(plane) if r.verb in ("patch", "create", "delete", "update")])
    watcher = Watcher(cluster)
    watcher.start()
    started = time.monotonic()
    new = [o for o in controller_objects("595.100.01") if o["kind"] == "DaemonSet"
           and o["metadata"]["name"] == "nvidia-driver-daemonset"]
    assert not server_side_apply(cluster, new, KindTable(), dry_run=False, field_manager="e2e-controller")

    def deleted_mid_upgrade() -> bool:
        state = (node_map(cluster)[DELETED_NODE].metadata.labels or {}).get(STATE, "")
        if state in IN_PROGRESS:
            cluster.delete(Node, DELETED_NODE)
            return True
        return False

    def finished() -> bool:
        states = [(n.metadata.labels or {}).get(STATE) for n in node_map(cluster).values()]
        return all(s in ("upgrade-done", "upgrade-failed") for s in states)

    try:
        wait_until(deleted_mid_upgrade, timeout=180 * SCALE, what=f"{DELETED_NODE} to start its upgrade", interval=0.2)
        wait_until(finished, timeout=300 * SCALE, what="every node upgrade-done or upgrade-failed", interval=1.0)
    except TimeoutError as error:
        pytest.fail(f"{error}\n{histogram(cluster)}\n{log_tail(controller)}", pytrace=False)
    finally:
        watcher.stop.set()
        watcher.join(timeout=10)
    elapsed = time.monotonic() - started
    nodes = node_map(cluster)
    failed = {name for name, n in nodes.items() if n.metadata.labels.get(STATE) == "upgrade-failed"}
    assert DELETED_NODE not in nodes
    assert failed == {NO_VALIDATION, PDB_NODE}, histogram(cluster)
    reasons = {name: nodes[name].metadata.annotations["nvidia.com/gpu-driver-upgrade-failure-reason"]
               for name in failed}
    assert "PodDisruptionBudget" in reasons[PDB_NODE] and "validator" in reasons[NO_VALIDATION]
    revision = {p.spec.nodeName: p.metadata.labels["controller-revision-hash"]
                for p in pods_of(cluster, "nvidia-driver-daemonset") if p.metadata.deletionTimestamp is None}
    done = sorted(name for name in nodes if name not in failed)
    assert len({revision[name] for name in done}) == 1 and revision[done[0]] != revision[PDB_NODE]
    assert not any(nodes[name].spec.unschedulable for name in done)
    assert DRA_NODE in done and not [p for p in cluster.list(Pod, namespace="default")
                                     if p.metadata.name == f"train-{DRA_NODE}"], "the DRA claim's pod was not evicted"
    assert watcher.max_in_progress <= MAX_PARALLEL and watcher.max_cordoned <= -(-NODES * 25 // 100)
    with pytest.raises(RuntimeError, match=f"failed on 2 node.*{NO_VALIDATION}: the validator.*{PDB_NODE}: a Pod"):
        _wait_for_rollout(plane)  # `pulumi up` with waitForDriverRollout fails, naming both nodes and why
    writes = len([r for r in _requests(plane) if r.verb in ("patch", "create", "delete", "update")]) - writes_before
    note(f"controller: driver rollout over {NODES} KWOK nodes (maxParallelUpgrades {MAX_PARALLEL}, maxUnavailable "
         f"{MAX_UNAVAILABLE}) in {elapsed:.1f} s, {writes / NODES:.1f} writes per node; at most "
         f"{watcher.max_in_progress} in progress and {watcher.max_cordoned} cordoned over {watcher.samples} samples; "
         f"failed as injected: {sorted(failed)}; {DELETED_NODE} deleted mid-upgrade")
    assert controller.poll() is None, log_tail(controller)


def test_status_metrics_and_rbac(plane: ControlPlane, cluster: Client, controller: Any) -> None:
    wait_until(lambda: "2 failed" in _status(cluster).get("summary", ""), timeout=30, what="the final status")
    status = _status(cluster)
    assert status["state"] == "notReady"
    assert "PodDisruptionBudget" in yaml.safe_load(status["nodes"])[PDB_NODE]["reason"]
    with urllib.request.urlopen(controller.metrics_url, timeout=5) as response:
        text = response.read().decode()
    assert "gpu_operator_nodes_upgrades_failed 2.0" in text
    assert f"gpu_operator_nodes_upgrades_done {float(NODES - 3)}" in text
    requests = _requests(plane)
    assert requests and not forbidden(requests), forbidden(requests)[:5]
    # the watches are still open: the API server audits a request when it completes
    unused = [grant for grant in unused_grants(granted_rules(controller_objects("595.91.07"), NAMESPACE, "gpu-operator"),
                                               requests) if not grant.startswith("watch ")]
    assert unused == [], f"the rendered RBAC grants what the controller never asked for: {unused}"
    note(f"controller RBAC: {len(requests)} requests, none refused, every grant used (watches still open)")
    assert controller.poll() is None, log_tail(controller)


def _status(client: Client) -> dict[str, str]:
    try:
        return dict(client.get(ConfigMap, "gpu-operator-status", namespace=NAMESPACE).data or {})
    except Exception:
        return {}


# --- 4. slow and crash-looping drivers -------------------------------------------------------------------------

SLOW_NODES = ("slow-a", "slow-crash", "slow-x", "slow-y")  # admitted in name order: slow-a, then slow-crash
SLOW_LABEL = ("e2e.pulumi-gpu-operator/driver", "slow")  # what kwok-stages/slow-driver.yaml selects
VALIDATED_OR_LATER = {"validation-required", "uncordon-required", "upgrade-done"}


@pytest.fixture(scope="module")
def slow_plane(e2e_tools: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(e2e_tools, tmp_path_factory.mktemp("slow-driver-plane")) as plane:
        yield plane


def _slow_node(name: str) -> Object:
    node = gpu_node(0)
    node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = name
    return node


def _slow_driver_template(version: str) -> list[Object]:
    """The new driver DaemonSet, its pods labelled for the slow-driver KWOK stages."""
    [driver] = [o for o in controller_objects(version, parallel=1, unavailable="100%") if o["kind"] == "DaemonSet"
                and o["metadata"]["name"] == "nvidia-driver-daemonset"]
    driver["spec"]["template"]["metadata"].setdefault("labels", {})[SLOW_LABEL[0]] = SLOW_LABEL[1]
    return [driver]


class _ReadinessWatcher(threading.Thread):
    """Samples nodes and driver pods: every node seen validated (or later) or uncordoned again after its cordon
    must run a new driver pod that is Ready; records each node's states and the violations."""

    def __init__(self, client: Client, old_revision: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.client, self.old, self.stop = client, old_revision, threading.Event()
        self.states: dict[str, list[str]] = {}
        self.cordoned: set[str] = set()
        self.violations: list[str] = []

    def run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                nodes = node_map(self.client)
                pods = [p for p in pods_of(self.client, "nvidia-driver-daemonset") if p.metadata.deletionTimestamp is None]
            except Exception:  # the control plane is stopping
                return
            drivers = {p.spec.nodeName: p for p in pods}
            for name, node in nodes.items():
                state = (node.metadata.labels or {}).get(STATE, "")
                history = self.states.setdefault(name, [])
                if not history or history[-1] != state:
                    history.append(state)
                if node.spec.unschedulable:
                    self.cordoned.add(name)
                started = any(s in IN_PROGRESS for s in history)
                checked = started and (state in VALIDATED_OR_LATER or (name in self.cordoned
                                                                        and not node.spec.unschedulable))
                if not checked:
                    continue
                pod = drivers.get(name)
                new = pod is not None and pod.metadata.labels.get("controller-revision-hash") != self.old.get(name)
                ready = pod is not None and pod.status.phase == "Running" and bool(pod.status.containerStatuses) and \
                    all(c.ready for c in pod.status.containerStatuses)
                if not (new and ready):
                    self.violations.append(f"{name}: {state!r}, schedulable={not node.spec.unschedulable}, driver pod "
                                           f"{'new' if new else 'old or missing'} and {'Ready' if ready else 'not Ready'}")


def test_slow_drivers_are_validated_only_when_ready_and_a_failed_node_holds_the_rollout(
        slow_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> None:
    admin = slow_plane.client()
    objects = controller_objects("595.91.07", parallel=1, unavailable="100%")
    failures = server_side_apply(admin, [*objects, *map(_slow_node, SLOW_NODES)], KindTable(), dry_run=False,
                                 field_manager="e2e-controller")
    assert not failures, "\n".join(map(str, failures))
    process = start_controller(slow_plane, admin, tmp_path_factory.mktemp("slow-controller"))
    watcher = None
    try:
        wait_until(lambda: sorted((n.metadata.labels or {}).get(STATE, "") for n in node_map(admin).values())
                   == ["upgrade-done"] * len(SLOW_NODES), timeout=120, what="every node upgrade-done on the old driver")
        old = {p.spec.nodeName: p.metadata.labels["controller-revision-hash"]
               for p in pods_of(admin, "nvidia-driver-daemonset")}
        watcher = _ReadinessWatcher(admin, old)
        watcher.start()
        assert not server_side_apply(admin, _slow_driver_template("595.100.01"), KindTable(), dry_run=False,
                                     field_manager="e2e-controller")

        def state(name: str) -> str:
            return (node_map(admin)[name].metadata.labels or {}).get(STATE, "")

        wait_until(lambda: state("slow-a") == "upgrade-done" and "pod-restart-required" in watcher.states.get("slow-a", []),
                   timeout=120, what="slow-a upgraded on its slow driver")
        wait_until(lambda: state("slow-crash") == "upgrade-failed", timeout=120,
                   what="slow-crash failed on its crash-looping driver")
        time.sleep(15)  # the crashing pod keeps changing: rounds go on, and must admit no one
        nodes = node_map(admin)
        reason = nodes["slow-crash"].metadata.annotations["nvidia.com/gpu-driver-upgrade-failure-reason"]
        assert "restarted more than 10 times" in reason
        for held in ("slow-x", "slow-y"):
            assert state(held) == "upgrade-required" and not nodes[held].spec.unschedulable, str(watcher.states)
            assert not set(watcher.states[held]) & IN_PROGRESS, watcher.states[held]
        assert watcher.violations == [], watcher.violations[:5]
        note(f"controller slow drivers: slow-a validated only once Ready ({watcher.states['slow-a']}); slow-crash "
             f"failed ({reason}); slow-x and slow-y held at upgrade-required at maxParallelUpgrades 1")
        assert process.poll() is None, log_tail(process)
    except (AssertionError, TimeoutError) as error:
        pytest.fail(f"{error}\n{histogram(admin)}\n{log_tail(process)}", pytrace=False)
    finally:
        if watcher is not None:
            watcher.stop.set()
            watcher.join(timeout=10)
        stop_process_group(process)
