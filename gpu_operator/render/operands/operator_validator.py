"""state-operator-validation: `nvidia-operator-validator`, the per-node proof that the GPU stack works.

Its init containers run the validator's checks in order and leave a status file for each under
`/run/nvidia/validations`, which the other operands wait on:

1. `driver-validation` → `driver-ready` (a host driver or the driver container answers `nvidia-smi`);
2. `toolkit-validation` → `toolkit-ready` (`nvidia-smi` works inside this container, started through the `nvidia`
   runtime class, or with the NRI plugin through the CDI annotation on this container);
3. `cuda-validation` → `cuda-ready` (a pod `nvidia-cuda-validator-*` pinned to the node runs CUDA's vectorAdd);
4. `plugin-validation` → `plugin-ready` (the node advertises `nvidia.com/gpu` or `nvidia.com/mig-*`); left out
   when the device plugin is disabled.

Pools whose GPUs DRA allocates (`gpuAllocation: dra`) carry `nvidia.com/gpu.deploy.device-plugin=false` and
never advertise `nvidia.com/gpu`, so a plugin check there would wait forever (NVIDIA's validator, which drops the
check only when the device plugin is off cluster-wide, crash-loops). When such pools sit beside device-plugin
pools, the validator is rendered twice: `nvidia-operator-validator` on nodes whose device-plugin label is not
`false`, and `nvidia-operator-validator-dra`, without the plugin check, on the others (a node affinity on that
label; a MIG manager's `paused-for-mig-change` keeps a node where it is).

The main container only sleeps; its preStop removes `*-ready`, so a restarted validator re-gates its dependents.
With our agent only the driver check stays privileged; the toolkit, cuda and plugin checks and the main container
run as unprivileged root, their status mount `HostToContainer` (see `agent_security`).
The validator has no `enabled` switch: it is always rendered.

`VALIDATOR_IMAGE` is the image of the CUDA workload pod that cuda-validation creates. It is always NVIDIA's
validator image, also when our agent runs the checks, because only that image carries the CUDA vectorAdd sample.

RBAC: the Role lets the checks create and clean up workload pods and read the validator DaemonSet; the ClusterRole
lets them read Nodes (allocatable GPUs, labels). NVIDIA's ClusterRole also grants `nvidia.com`
`clusterpolicies/finalizers` and `nvidiadrivers/finalizers`: the validator copies its DaemonSet's ownerReferences
(a ClusterPolicy, with blockOwnerDeletion) onto the workload pods, which needs those finalizer rights. We create
no ClusterPolicy and no ownerReferences, so those rules grant nothing here and are left out, as is the Role rule
for OpenShift's SCC `privileged`. With our agent the rules are exactly its calls: pods create, get, list, watch
and delete (no update or patch), its DaemonSet get, its node get (tests/e2e/test_fleet.py holds them to that).
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import image_path, operand_image
from gpu_operator.render.k8s import (
    Object,
    cluster_role,
    cluster_role_binding,
    daemonset,
    deploy_selector,
    env,
    host_path,
    mount,
    privileged,
    role,
    role_binding,
    rule,
    service_account,
)
from gpu_operator.render.operands.agent_security import secure_agent, secure_check
from gpu_operator.render.operands.common import SHELL, VALIDATIONS_DIR, node_name_env
from gpu_operator.render.operands.driver_validation import (
    OPERATOR_NAMESPACE,
    SECTION,
    driver_validation_init,
    validator_program,
)
from gpu_operator.render.transforms import DEFAULT_DRIVER_INSTALL_DIR, finalize_daemonset, merge_env

__all__ = ["STATE", "KEY", "NAME", "CONTAINER", "render"]

STATE = "state-operator-validation"
KEY = "operator_validator"
NAME = "nvidia-operator-validator"
CONTAINER = "nvidia-operator-validator"
_LABELS = {"app": NAME, "app.kubernetes.io/part-of": "gpu-operator"}
#: The validator of the nodes without a device plugin (DRA pools), beside the main one.
DRA_NAME = "nvidia-operator-validator-dra"
_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"
#: With the NRI plugin, the container that must see the GPUs gets the CDI device by annotation.
_NRI_CDI_DEVICE = "management.nvidia.com/gpu=all"


def _check(ctx: RenderContext, component: str, variables: list[Object]) -> Object:
    """A validation init container running the check `component` with `variables` as env."""
    container: Object = {
        "name": f"{component}-validation",
        "image": "",
        **validator_program(ctx),
        "env": variables,
        "securityContext": privileged(),
        "volumeMounts": [mount("run-nvidia-validations", VALIDATIONS_DIR, propagation="Bidirectional")],
    }
    secure_check(ctx, component, container)
    return container


def _workload_env(ctx: RenderContext) -> list[Object]:
    """What the cuda and plugin checks need to start a workload pod like this DaemonSet's pods."""
    validator = ctx.spec.validator
    variables = [
        env("VALIDATOR_IMAGE", image_path(validator)),
        env("VALIDATOR_IMAGE_PULL_POLICY", validator.image_pull_policy),
    ]
    if validator.image_pull_secrets:
        variables.append(env("VALIDATOR_IMAGE_PULL_SECRETS", ",".join(validator.image_pull_secrets)))
    if ctx.runtime_class is not None:
        variables.append(env("VALIDATOR_RUNTIME_CLASS", ctx.runtime_class))
    return variables


def _toolkit_validation(ctx: RenderContext) -> Object:
    container = _check(ctx, "toolkit", [
        env("NVIDIA_VISIBLE_DEVICES", "all"), env("WITH_WAIT", False), env("COMPONENT", "toolkit"),
    ])
    merge_env(container, ctx.spec.validator.toolkit.env)
    return container


def _cuda_validation(ctx: RenderContext) -> Object:
    container = _check(ctx, "cuda", [env("WITH_WAIT", False), env("COMPONENT", "cuda"), node_name_env(), OPERATOR_NAMESPACE])
    merge_env(container, _workload_env(ctx))
    merge_env(container, ctx.spec.validator.cuda.env)
    return container


def _plugin_validation(ctx: RenderContext) -> Object:
    container = _check(ctx, "plugin", [
        env("COMPONENT", "plugin"),
        env("WITH_WAIT", False),
        env("WITH_WORKLOAD", False),
        env("MIG_STRATEGY", ctx.mig_strategy),
        node_name_env(),
        OPERATOR_NAMESPACE,
    ])
    merge_env(container, _workload_env(ctx))
    merge_env(container, ctx.spec.validator.plugin.env)
    return container


def _init_containers(ctx: RenderContext, with_plugin: bool) -> list[Object]:
    checks = [driver_validation_init(ctx), _toolkit_validation(ctx), _cuda_validation(ctx)]
    if with_plugin:
        checks.append(_plugin_validation(ctx))
    return checks


def _split_for_dra(ctx: RenderContext) -> bool:
    """Device-plugin pools and DRA pools both exist: each kind gets its own validator."""
    return ctx.spec.device_plugin.enabled and any(pool.gpu_allocation == "dra" for pool in ctx.config.pools)


def _device_plugin_affinity(operator: str) -> Object:
    term = {"matchExpressions": [{"key": _DEVICE_PLUGIN_LABEL, "operator": operator, "values": ["false"]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _main_container(ctx: RenderContext) -> Object:
    container: Object = {
        "name": CONTAINER,
        "image": operand_image(ctx, SECTION, ctx.spec.validator),
        "command": SHELL,
        "args": ["echo all validations are successful; sleep infinity"],
        "securityContext": privileged(runAsUser=0),
        "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", f"rm -f {VALIDATIONS_DIR}/*-ready"]}}},
        "volumeMounts": [mount("run-nvidia-validations", VALIDATIONS_DIR, propagation="Bidirectional")],
    }
    secure_agent(ctx, SECTION, container)
    return container


def _daemonset(ctx: RenderContext, name: str = NAME, with_plugin: bool = True, affinity: Object | None = None) -> Object:
    labels = {**_LABELS, "app": name}
    pod: Object = {
        "nodeSelector": deploy_selector("operator-validator"),
        "serviceAccountName": NAME,
        "initContainers": _init_containers(ctx, with_plugin and ctx.spec.device_plugin.enabled),
        "containers": [_main_container(ctx)],
        "volumes": [
            host_path("run-nvidia-validations", VALIDATIONS_DIR, "DirectoryOrCreate"),
            host_path("driver-install-dir", DEFAULT_DRIVER_INSTALL_DIR),
            host_path("host-root", "/"),
            host_path("host-dev-char", "/dev/char"),
        ],
    }
    if affinity is not None:
        pod["affinity"] = affinity
    if ctx.runtime_class is not None:
        pod["runtimeClassName"] = ctx.runtime_class
    annotations = {"nvidia.cdi.k8s.io/container.toolkit-validation": _NRI_CDI_DEVICE} if ctx.nri_plugin else None
    ds = daemonset(ctx, name, labels=labels, selector=labels, pod_spec=pod, pod_annotations=annotations)
    return finalize_daemonset(ctx, ds, section=SECTION, spec=ctx.spec.validator, main_container=CONTAINER)


#: What our validator calls (gpu_operator/agents/validator): its workload pods are listed (the previous run's),
#: created, watched and deleted, never updated or patched; its DaemonSet and its node are each read by name.
_AGENT_ROLE_RULES = [
    rule([""], ["pods"], ["create", "get", "list", "watch", "delete"]),
    rule(["apps"], ["daemonsets"], ["get"]),
]
_NVIDIA_ROLE_RULES = [
    rule([""], ["pods"], ["create", "get", "list", "watch", "update", "patch", "delete"]),
    rule(["apps"], ["daemonsets"], ["get", "list", "watch"]),
]


def _rbac(ctx: RenderContext) -> list[Object]:
    agent = ctx.uses_agent(SECTION)
    return [
        role(ctx, NAME, _AGENT_ROLE_RULES if agent else _NVIDIA_ROLE_RULES),
        cluster_role(NAME, [rule([""], ["nodes"], ["get"] if agent else ["get", "list", "watch"])]),
        role_binding(ctx, NAME),
        cluster_role_binding(ctx, NAME),
    ]


def render(ctx: RenderContext) -> list[Object]:
    if not _split_for_dra(ctx):
        return [service_account(ctx, NAME), *_rbac(ctx), _daemonset(ctx)]
    return [
        service_account(ctx, NAME),
        *_rbac(ctx),
        _daemonset(ctx, affinity=_device_plugin_affinity("NotIn")),
        _daemonset(ctx, DRA_NAME, with_plugin=False, affinity=_device_plugin_affinity("In")),
    ]
