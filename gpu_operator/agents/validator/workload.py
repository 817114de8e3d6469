"""The workload pods of the cuda and plugin checks, as NVIDIA's validator builds them.

Both pods are pinned to the node (`nodeName`), run as the validator's service account with `restartPolicy:
OnFailure`, take the tolerations of the validator DaemonSet and its ownerReferences (so they are collected with
it), and run CUDA's `vectorAdd` sample in an init container from `VALIDATOR_IMAGE` (NVIDIA's validator image,
which ships the sample); the main container only reports success. The server names them from `generateName`.

* cuda: `nvidia-cuda-validator-<random>`, label `app=nvidia-cuda-validator`; the init container
  `cuda-validation` is privileged and sees every GPU (`NVIDIA_VISIBLE_DEVICES=all`, and the CDI annotation
  `nvidia.cdi.k8s.io/container.cuda-validation: management.nvidia.com/gpu=all` for the NRI plugin).
* plugin: `nvidia-device-plugin-validator-<random>`, label `app=nvidia-device-plugin-validator`; the init
  container `plugin-validation` is unprivileged and requests one GPU resource from the device plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CUDA_APP",
    "PLUGIN_APP",
    "SERVICE_ACCOUNT",
    "VALIDATOR_DAEMONSET",
    "WorkloadImage",
    "cuda_pod",
    "plugin_pod",
]

Object = dict[str, Any]

CUDA_APP = "nvidia-cuda-validator"
PLUGIN_APP = "nvidia-device-plugin-validator"
SERVICE_ACCOUNT = "nvidia-operator-validator"
#: The DaemonSet whose tolerations and ownerReferences the workload pods copy.
VALIDATOR_DAEMONSET = "nvidia-operator-validator"
_CDI_ANNOTATION = "nvidia.cdi.k8s.io/container.cuda-validation"
_CDI_ALL_GPUS = "management.nvidia.com/gpu=all"
_DEFAULT_PULL_POLICY = "IfNotPresent"
_SHELL = ["sh", "-c"]


@dataclass(frozen=True, slots=True)
class WorkloadImage:
    """`VALIDATOR_IMAGE`, `VALIDATOR_IMAGE_PULL_POLICY`, `VALIDATOR_IMAGE_PULL_SECRETS`, `VALIDATOR_RUNTIME_CLASS`."""

    image: str
    pull_policy: str = ""
    pull_secrets: tuple[str, ...] = ()
    runtime_class: str = ""


def _container(name: str, image: WorkloadImage, args: str, security: Object, **extra: Any) -> Object:
    return {
        "name": name,
        "image": image.image,
        "imagePullPolicy": image.pull_policy or _DEFAULT_PULL_POLICY,
        "command": list(_SHELL),
        "args": [args],
        **extra,
        "securityContext": security,
    }


def _pod(
    app: str,
    namespace: str,
    node: str,
    image: WorkloadImage,
    tolerations: Sequence[Mapping[str, Any]],
    owners: Sequence[Mapping[str, Any]],
    init: Object,
    main: Object,
    annotations: Mapping[str, str] | None = None,
) -> Object:
    metadata: Object = {"generateName": f"{app}-", "namespace": namespace, "labels": {"app": app}}
    if annotations:
        metadata["annotations"] = dict(annotations)
    if owners:
        metadata["ownerReferences"] = [dict(owner) for owner in owners]
    spec: Object = {
        "nodeName": node,
        "restartPolicy": "OnFailure",
        "serviceAccountName": SERVICE_ACCOUNT,
        "initContainers": [init],
        "containers": [main],
    }
    if tolerations:
        spec["tolerations"] = [dict(toleration) for toleration in tolerations]
    if image.pull_secrets:
        spec["imagePullSecrets"] = [{"name": secret} for secret in image.pull_secrets]
    if image.runtime_class:
        spec["runtimeClassName"] = image.runtime_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def cuda_pod(
    namespace: str,
    node: str,
    image: WorkloadImage,
    tolerations: Sequence[Mapping[str, Any]] = (),
    owners: Sequence[Mapping[str, Any]] = (),
) -> Object:
    """The pod that runs vectorAdd with every GPU of the node (through the runtime, not the device plugin)."""
    init = _container(
        "cuda-validation",
        image,
        "vectorAdd",
        {"privileged": True},
        env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
    )
    main = _container(
        CUDA_APP,
        image,
        "echo cuda workload validation is successful",
        {"privileged": True, "readOnlyRootFilesystem": True},
    )
    return _pod(CUDA_APP, namespace, node, image, tolerations, owners, init, main, {_CDI_ANNOTATION: _CDI_ALL_GPUS})


def plugin_pod(
    namespace: str,
    node: str,
    image: WorkloadImage,
    resource: str,
    tolerations: Sequence[Mapping[str, Any]] = (),
    owners: Sequence[Mapping[str, Any]] = (),
) -> Object:
    """The pod that runs vectorAdd on one `resource` (`nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`) from the plugin."""
    one = {resource: "1"}
    init = _container(
        "plugin-validation",
        image,
        "vectorAdd",
        {"allowPrivilegeEscalation": False},
        resources={"limits": dict(one), "requests": dict(one)},
    )
    main = _container(
        PLUGIN_APP,
        image,
        "echo device-plugin workload validation is successful",
        {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
    )
    return _pod(PLUGIN_APP, namespace, node, image, tolerations, owners, init, main)
