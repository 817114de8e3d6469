"""Snapshot fixtures: a healthy GPU stack as the API server would return it, and helpers to break one part.

Two H100 nodes and one InfiniBand H100 node (MOFED ready, `rdma/shared_ib` advertised), plus a CPU node; every
operand's DaemonSet with one ready pod per GPU node; the validator's init containers all exited 0; a device-plugin
sharing config and a mig-parted config mounted where the operands read them; a NicClusterPolicy with the shared
RDMA device plugin.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from gpu_operator.diag.snapshot import Snapshot

__all__ = ["NS", "NOW", "GPU_NODES", "IB_NODE", "cluster", "snapshot", "node", "pod", "daemonset", "OPERAND_APPS",
           "managed_label", "find", "set_container_state", "crash_loop_objects"]

NS = "gpu-operator"
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
GPU_NODES = ("gpu-0", "gpu-1", "ib-0")
IB_NODE = "ib-0"
CPU_NODE = "cpu-0"
#: Operand app → (deploy label suffix, init containers, main containers)
OPERAND_APPS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "nvidia-driver-daemonset": ("driver", ("k8s-driver-manager",), ("nvidia-driver-ctr",)),
    "nvidia-container-toolkit-daemonset": ("container-toolkit", ("driver-validation",),
                                           ("nvidia-container-toolkit-ctr",)),
    "nvidia-operator-validator": ("operator-validator", ("driver-validation", "toolkit-validation",
                                                         "cuda-validation", "plugin-validation"),
                                  ("nvidia-operator-validator",)),
    "nvidia-device-plugin-daemonset": ("device-plugin", ("toolkit-validation", "config-manager-init"),
                                       ("nvidia-device-plugin", "config-manager")),
    "nvidia-mig-manager": ("mig-manager", ("toolkit-validation",), ("nvidia-mig-manager",)),
    "gpu-feature-discovery": ("gpu-feature-discovery", ("toolkit-validation",), ("gpu-feature-discovery",)),
    "nvidia-dcgm-exporter": ("dcgm-exporter", ("toolkit-validation",), ("nvidia-dcgm-exporter",)),
}
MIG_LAYOUTS = "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n" \
              "  all-1g.10gb:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {1g.10gb: 7}\n"
PLUGIN_CONFIGS = {
    "default": "version: v1\nflags: {migStrategy: single}\n",
    "shared": "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n    resources:\n"
              "      - name: nvidia.com/gpu\n        replicas: 4\n",
}


def managed_label(label: str, when: datetime, manager: str = "operator") -> dict[str, Any]:
    """A managedFields entry owning one node label, last written at `when`."""
    return {"manager": manager, "operation": "Update", "apiVersion": "v1",
            "time": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {f"f:{label}": {}}}}}


def node(name: str, *, gpus: int | None = 8, extra: dict[str, str] | None = None) -> dict[str, Any]:
    node_labels = {"kubernetes.io/hostname": name}
    resources = {"cpu": "96", "memory": "1800Gi", "pods": "110"}
    if gpus is not None:
        node_labels.update({f"nvidia.com/gpu.deploy.{deploy}": "true" for deploy, _, _ in OPERAND_APPS.values()})
        node_labels.update({
            "nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": str(gpus), "nvidia.com/gpu.replicas": "1",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/mig.config": "all-disabled",
            "nvidia.com/mig.config.state": "success", "nvidia.com/gpu-driver-upgrade-state": "upgrade-done",
            "feature.node.kubernetes.io/pci-10de.present": "true",
        })
        resources["nvidia.com/gpu"] = str(gpus)
    node_labels.update(extra or {})
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": node_labels,
                         "managedFields": [managed_label("nvidia.com/mig.config.state", NOW - timedelta(days=2))]},
            "status": {"capacity": dict(resources), "allocatable": dict(resources),
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _terminated() -> dict[str, Any]:
    return {"terminated": {"exitCode": 0, "reason": "Completed"}}


def pod(app: str, node_name: str, index: int = 0) -> dict[str, Any]:
    _, inits, mains = OPERAND_APPS[app]
    started = (NOW - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{app}-{node_name}", "namespace": NS, "labels": {"app": app},
                     "creationTimestamp": started},
        "spec": {"nodeName": node_name, "containers": [{"name": c, "image": f"nvcr.io/nvidia/{app}:1"} for c in mains]},
        "status": {
            "phase": "Running", "startTime": started,
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Initialized", "status": "True"},
                           {"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}],
            "initContainerStatuses": [{"name": c, "image": "validator:1", "imageID": "", "ready": True, "restartCount": 0,
                                       "state": _terminated()} for c in inits],
            "containerStatuses": [{"name": c, "image": f"nvcr.io/nvidia/{app}:1", "imageID": "", "ready": True,
                                   "restartCount": 0,
                                   "state": {"running": {"startedAt": started}}} for c in mains],
        },
    }


def daemonset(app: str, scheduled: int, template_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": app, "namespace": NS, "labels": {"app": app}},
            "spec": {"selector": {"matchLabels": {"app": app}},
                     "template": {"metadata": {"labels": {"app": app}}, "spec": template_spec or {"containers": []}}},
            "status": {"desiredNumberScheduled": scheduled, "currentNumberScheduled": scheduled,
                       "numberReady": scheduled, "numberAvailable": scheduled,
                       "numberMisscheduled": 0}}


def _template(app: str) -> dict[str, Any] | None:
    if app == "nvidia-device-plugin-daemonset":
        return {"containers": [{"name": "config-manager", "volumeMounts": [
            {"name": "available-configs", "mountPath": "/available-configs"}]}],
            "volumes": [{"name": "available-configs", "configMap": {"name": "plugin-configs"}}]}
    if app == "nvidia-mig-manager":
        return {"containers": [{"name": "nvidia-mig-manager",
                                "env": [{"name": "CONFIG_FILE", "value": "/mig-parted-config/config.yaml"}],
                                "volumeMounts": [{"name": "mig-parted-config", "mountPath": "/mig-parted-config"}]}],
                "volumes": [{"name": "mig-parted-config", "configMap": {"name": "custom-mig-parted-config"}}]}
    return None


def cluster() -> dict[str, Any]:
    """The healthy cluster's objects, by Snapshot field, to change before `snapshot()`."""
    nodes = [node(n) for n in GPU_NODES] + [node(CPU_NODE, gpus=None)]
    ib = nodes[GPU_NODES.index(IB_NODE)]
    ib["metadata"]["labels"].update({"feature.node.kubernetes.io/pci-15b3.present": "true",
                                     "network.nvidia.com/operator.mofed.wait": "false"})
    ib["status"]["allocatable"]["rdma/shared_ib"] = "63"
    shared = {"configList": [{"resourceName": "shared_ib", "rdmaHcaMax": 63,
                              "selectors": {"vendors": ["15b3"], "linkTypes": ["infiniband"]}}]}
    return {
        "nodes": nodes,
        "pods": [pod(app, n) for app in OPERAND_APPS for n in GPU_NODES],
        "daemonsets": [daemonset(app, len(GPU_NODES), _template(app)) for app in OPERAND_APPS],
        "config_maps": [
            {"kind": "ConfigMap", "metadata": {"name": "plugin-configs", "namespace": NS},
             "data": dict(PLUGIN_CONFIGS)},
            {"kind": "ConfigMap", "metadata": {"name": "custom-mig-parted-config", "namespace": NS},
             "data": {"config.yaml": MIG_LAYOUTS}},
        ],
        "events": [],
        "gpu_pods": [],
        "cluster_policy": None,
        "nic_cluster_policy": {"kind": "NicClusterPolicy", "metadata": {"name": "nic-cluster-policy"},
                               "spec": {"rdmaSharedDevicePlugin": {"config": json.dumps(shared)}},
                               "status": {"state": "ready"}},
    }


def snapshot(change: Callable[[dict[str, Any]], None] | None = None) -> Snapshot:
    objects = copy.deepcopy(cluster())
    if change is not None:
        change(objects)
    return Snapshot(namespace=NS, now=NOW, **objects)


def find(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(o for o in objects if o["metadata"]["name"] == name)


def set_container_state(pod_obj: dict[str, Any], container: str, state: dict[str, Any], *, ready: bool = False,
                        restarts: int = 0, last: dict[str, Any] | None = None) -> None:
    """Put one (init) container of a pod into `state`; the pod's Ready condition follows."""
    status = pod_obj["status"]
    for key in ("initContainerStatuses", "containerStatuses"):
        for entry in status.get(key) or []:
            if entry["name"] == container:
                entry.update({"state": state, "ready": ready, "restartCount": restarts})
                if last is not None:
                    entry["lastState"] = last
    if not ready:
        for condition in status["conditions"]:
            if condition["type"] in ("Ready", "ContainersReady"):
                condition["status"] = "False"


def crash_loop_objects() -> dict[str, Any]:
    """The healthy cluster with gpu-0's driver container in CrashLoopBackOff."""
    objects = copy.deepcopy(cluster())
    set_container_state(find(objects["pods"], "nvidia-driver-daemonset-gpu-0"), "nvidia-driver-ctr",
                        {"waiting": {"reason": "CrashLoopBackOff"}}, restarts=3)
    return objects
