"""The controller's e2e fleet: KWOK GPU nodes with one GPU pod each, the controller's rendered objects, the
controller run as local processes with its ServiceAccount's token, and what the tests read back (node states,
a watcher of the upgrade limits). Shared by the rollout module and the chaos module.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import yaml
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap, Node, Pod

from gpu_operator.config import parse_config
from gpu_operator.render import render
from tests.e2e.agents import AGENT, service_account_token
from tests.e2e.control_plane import KWOK_ANNOTATION, ControlPlane, free_port
from tests.e2e.nodes import FLEET_CONFIG

__all__ = ["IN_PROGRESS", "MAX_PARALLEL", "MAX_UNAVAILABLE", "NAMESPACE", "NODES", "NO_VALIDATION", "SCALE",
           "STATE", "Watcher", "controller_objects", "fleet_document", "gpu_node", "gpu_pod", "histogram",
           "log_tail", "node_map", "pods_of", "start_controller", "DRA_NODE", "PDB_NODE", "DELETED_NODE"]

NAMESPACE = "gpu-operator"
#: 100 nodes in `make e2e`; CONTROLLER_E2E_NODES=1000 CONTROLLER_E2E_PARALLEL=50 measures the large rollout
NODES = int(os.environ.get("CONTROLLER_E2E_NODES", "100"))
SCALE = max(1.0, NODES / 100)  # the waits grow with the fleet
MAX_PARALLEL, MAX_UNAVAILABLE = int(os.environ.get("CONTROLLER_E2E_PARALLEL", "20")), "25%"
STATE = "nvidia.com/gpu-driver-upgrade-state"
#: gpu-007's validator never turns Ready (kwok-stages/validator-never-ready.yaml), gpu-013's GPU pod is protected
#: by a PodDisruptionBudget, gpu-042 is deleted mid-upgrade, gpu-021's GPU comes from a DRA claim
NO_VALIDATION, PDB_NODE, DELETED_NODE, DRA_NODE = "gpu-007", "gpu-013", "gpu-042", "gpu-021"
IN_PROGRESS = {"cordon-required", "wait-for-jobs-required", "pod-deletion-required", "drain-required",
               "pod-restart-required", "validation-required", "uncordon-required"}
KEPT_KINDS = {"RuntimeClass", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Namespace"}
Object = dict[str, Any]


def fleet_document(version: str, parallel: int = MAX_PARALLEL, unavailable: str = MAX_UNAVAILABLE,
                   timeouts: tuple[int, int] = (5, 15), rollout: Object | None = None) -> Object:
    """The fleet's config at a driver `version`; `timeouts` are the pod deletion's and the validation's (short, so
    the injected faults fail in seconds); `rollout`: `operator.driver.rollout`, the stages."""
    document = yaml.safe_load(FLEET_CONFIG.read_text())
    document["namespace"] = NAMESPACE
    document["operator"].setdefault("driver", {})["version"] = version
    document["operator"]["driver"]["upgradePolicy"] = {
        "maxParallelUpgrades": parallel, "maxUnavailable": unavailable,
        "podDeletion": {"timeoutSeconds": timeouts[0], "force": True}}  # the test's GPU pods are bare pods
    if rollout is not None:
        document["operator"]["driver"]["rollout"] = rollout
    document["controller"] = {"validationTimeoutSeconds": timeouts[1], "resyncSeconds": 60}
    return document


def controller_objects(version: str, parallel: int = MAX_PARALLEL, unavailable: str = MAX_UNAVAILABLE,
                       timeouts: tuple[int, int] = (5, 15), rollout: Object | None = None) -> list[Object]:
    """The controller's objects and the driver and validator DaemonSets, as the render gives them."""
    chosen = []
    for obj in render(parse_config(fleet_document(version, parallel, unavailable, timeouts, rollout))):
        name, kind = obj["metadata"]["name"], obj["kind"]
        if (kind in KEPT_KINDS and (name.startswith("gpu-operator") or kind in ("Namespace", "ServiceAccount", "RuntimeClass"))) or name in (
                "nvidia-driver-daemonset", "nvidia-operator-validator"):
            chosen.append(obj)
    return chosen


def gpu_node(index: int) -> Object:
    name = f"gpu-{index:03d}"
    resources = {"cpu": "96", "memory": "1800Gi", "pods": "110", "nvidia.com/gpu": "8"}
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok",
              "feature.node.kubernetes.io/pci-10de.present": "true"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]}},
            "status": {"capacity": resources, "allocatable": resources}}


def gpu_pod(node: str) -> Object:
    if node == DRA_NODE:  # its GPU comes from a ResourceClaim of NVIDIA's DRA driver, not from nvidia.com/gpu
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"train-{node}", "namespace": "default", "labels": {"app": f"train-{node}"}},
                "spec": {"nodeName": node, "resourceClaims": [{"name": "gpu", "resourceClaimName": f"gpu-{node}"}],
                         "containers": [{"name": "train", "image": "example.com/train:1",
                                         "resources": {"claims": [{"name": "gpu"}]}}]}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"train-{node}", "namespace": "default", "labels": {"app": f"train-{node}"}},
            "spec": {"nodeName": node, "containers": [{"name": "train", "image": "example.com/train:1",
                                                        "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def start_controller(plane: ControlPlane, cluster: Client, workdir: Path, *args: str) -> Any:
    """The controller as a local process with a token of its rendered ServiceAccount (`args`: more flags)."""
    settings = cluster.get(ConfigMap, "gpu-operator-controller", namespace=NAMESPACE).data["controller.json"]
    (workdir / "controller.json").write_text(settings)
    token = service_account_token(cluster, NAMESPACE, "gpu-operator")
    kubeconfig = plane.write_kubeconfig(workdir / "kubeconfig", token)
    metrics_port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1",
           "KUBECONFIG": str(kubeconfig), "OPERATOR_NAMESPACE": NAMESPACE,
           "GPU_OPERATOR_CONTROLLER_CONFIG": str(workdir / "controller.json")}
    log = (workdir / "controller.log").open("w")
    process = subprocess.Popen(
        [str(AGENT), "operator", f"--metrics-bind-address=127.0.0.1:{metrics_port}",
         f"--health-probe-bind-address=127.0.0.1:{free_port()}", *args],
        env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    process.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"  # type: ignore[attr-defined]
    process.log_path = workdir / "controller.log"  # type: ignore[attr-defined]
    return process


def node_map(client: Client) -> dict[str, Any]:
    return {node.metadata.name: node for node in client.list(Node)}


def pods_of(client: Client, app: str) -> list[Any]:
    return list(client.list(Pod, namespace=NAMESPACE, labels={"app": app}))


def log_tail(controller: Any) -> str:
    return "\n".join(Path(controller.log_path).read_text().splitlines()[-40:])


class Watcher(threading.Thread):
    """Samples the nodes while the rollout runs, recording the worst in-progress and cordoned counts."""

    def __init__(self, client: Client) -> None:
        super().__init__(daemon=True)
        self.client, self.stop = client, threading.Event()
        self.max_in_progress = self.max_cordoned = self.samples = 0

    def run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                nodes = node_map(self.client).values()
            except Exception:  # the control plane is stopping
                return
            states = [(n.metadata.labels or {}).get(STATE, "") for n in nodes]
            self.max_in_progress = max(self.max_in_progress, sum(s in IN_PROGRESS for s in states))
            self.max_cordoned = max(self.max_cordoned, sum(bool(n.spec.unschedulable) for n in nodes))
            self.samples += 1


def histogram(client: Client) -> str:
    """Where the nodes are: (state, cordoned, driver pod revision, validator ready) -> nodes."""
    drivers = {p.spec.nodeName: (p.metadata.labels or {}).get("controller-revision-hash", "")
               + ("(terminating)" if p.metadata.deletionTimestamp else "") for p in pods_of(client, "nvidia-driver-daemonset")}
    validators = {p.spec.nodeName: any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or ())
                  for p in pods_of(client, "nvidia-operator-validator")}
    rows: dict[tuple[Any, ...], list[str]] = {}
    for name, node in sorted(node_map(client).items()):
        key = ((node.metadata.labels or {}).get(STATE), bool(node.spec.unschedulable), drivers.get(name),
               validators.get(name))
        rows.setdefault(key, []).append(name)
    return "\n".join(f"{key}: {len(names)} {names[:4]}" for key, names in rows.items())
