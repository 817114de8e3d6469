"""The driver DaemonSet of one NVIDIADriver node pool, labelled and selected as NVIDIA's controller renders it.

Our driver pod is built once (:mod:`.driver`) for both of NVIDIA's paths; what NVIDIA's NVIDIADriver template
(`manifests/state-driver/0500_daemonset.yaml`, gpu-operator v26.7.0) does differently from the ClusterPolicy one
(`assets/state-driver/0500_daemonset.yaml`) is applied here:

* names (:mod:`.nvidia_driver_names`): the DaemonSet and its `app` label and selector are the app name, the
  ServiceAccount is the node pool's driver name;
* labels on the DaemonSet and its pods: `app`, `nvidia.com/node.os-version: <osTag>`,
  `nvidia.com/precompiled: "true"|"false"`, `nvidia.com/precompiled.kernel-version: <sanitized kernel>` for a
  precompiled pool, `app.kubernetes.io/component: nvidia-driver`, and the spec's `labels` without `app` and
  `app.kubernetes.io/*` (`sanitizeDriverLabels`); `nvidia.com/gpu-operator.state: state-driver` on the
  DaemonSet only (`stateSkel.addStateSpecificLabels`);
* the pod anti-affinity also keeps a vGPU manager off the node, the tolerations are the template's
  `nvidia.com/gpu` one followed by the spec's (appended, not replaced as `daemonsets.tolerations` are);
* the driver container runs `init` followed by the spec's `args` (ClusterPolicy's `args` replace `init`), with
  `NVIDIA_VISIBLE_DEVICES=void` first in its env ("always use runc for driver containers").

Ours on top: the DaemonSet carries the owner label `nvidia.com/gpu-operator.driver.owner: <name>` in its metadata
(NVIDIA's has an ownerReference to the NVIDIADriver instead, and we render no NVIDIADriver), so the controller and
`kubectl get ds -l nvidia.com/gpu-operator.driver.owner=<name>` find a driver's DaemonSets; the pods also tolerate
the taints of the driver's pools, whatever its `tolerations` say, so it never misses its own nodes.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpu_operator.config.node_metadata import DRIVER_OWNER_LABEL
from gpu_operator.config.nvidia_driver import NvidiaDriverSpec
from gpu_operator.config.pools import GpuPool
from gpu_operator.render.k8s import Object, env
from gpu_operator.render.operands.driver_pools import DriverPool, sanitized_kernel

__all__ = [
    "ANTI_AFFINITY_COMPONENTS",
    "NODE_OS_LABEL",
    "PRECOMPILED_KERNEL_LABEL",
    "STATE_LABEL",
    "daemonset_labels",
    "shape_pod",
]

STATE_LABEL = "nvidia.com/gpu-operator.state"
NODE_OS_LABEL = "nvidia.com/node.os-version"
PRECOMPILED_LABEL = "nvidia.com/precompiled"
PRECOMPILED_KERNEL_LABEL = "nvidia.com/precompiled.kernel-version"
#: NVIDIADriver's anti-affinity: no second driver, and no vGPU manager, on a node.
ANTI_AFFINITY_COMPONENTS = ("nvidia-driver", "nvidia-vgpu-manager")
_GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def daemonset_labels(pool: DriverPool, component: str) -> dict[str, str]:
    """The labels NVIDIA's template gives the DaemonSet and its pods (the spec's own labels come with them)."""
    labels = {
        "app": pool.name,
        NODE_OS_LABEL: pool.os.tag,
        PRECOMPILED_LABEL: "true" if pool.precompiled else "false",
    }
    if pool.kernel is not None:
        labels[PRECOMPILED_KERNEL_LABEL] = sanitized_kernel(pool.kernel)
    labels["app.kubernetes.io/component"] = component
    return labels


def _tolerations(current: list[Object], pools: Iterable[GpuPool]) -> list[Object]:
    wanted = [_GPU_TOLERATION, *current, *(taint.toleration for pool in pools for taint in pool.node_taints)]
    unique: list[Object] = []
    for toleration in wanted:
        if toleration not in unique:
            unique.append(toleration)
    return unique


def shape_pod(ds: Object, owner: str, spec: NvidiaDriverSpec, pools: Iterable[GpuPool], main: str) -> None:
    """Make a finalized driver DaemonSet NVIDIADriver's, in place (see the module docstring)."""
    ds["metadata"]["labels"] = {**ds["metadata"]["labels"], STATE_LABEL: "state-driver", DRIVER_OWNER_LABEL: owner}
    pod = ds["spec"]["template"]["spec"]
    pod["tolerations"] = _tolerations(pod.get("tolerations", []), pools)
    container = next(c for c in pod["containers"] if c["name"] == main)
    container["args"] = ["init", *spec.args]
    variables = container.setdefault("env", [])
    if all(variable["name"] != "NVIDIA_VISIBLE_DEVICES" for variable in variables):
        variables.insert(0, env("NVIDIA_VISIBLE_DEVICES", "void"))
