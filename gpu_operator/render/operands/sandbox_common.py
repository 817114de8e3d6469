"""Pieces the sandbox (VM workload) operands share: when they deploy, their RBAC, and their validation gates.

Sandbox operands only exist when `sandboxWorkloads.enabled` is true; nodes then pick a role with the
`nvidia.com/gpu.workload.config` label (container, vm-passthrough, vm-vgpu), which the node labeller turns into
`nvidia.com/gpu.deploy.*` labels. Some operands also depend on `sandboxWorkloads.mode`: KubeVirt gets the
sandbox device plugin, Kata gets the Kata sandbox device plugin and the CC manager.

The sandbox validator's init containers write status files under `/run/nvidia/validations` (`workload-type`,
`vfio-pci-ready`, `vgpu-manager-ready` or `host-vgpu-manager-ready`, `vgpu-devices-ready`, `cc-manager-ready`);
the device plugins and the vGPU device manager gate on them with small wait loops.

RBAC: NVIDIA also grants each operand `use` of OpenShift's `privileged` SecurityContextConstraints and read access
to OpenShift's `config.openshift.io` clusterversions. Neither grants anything off OpenShift, so both are left out,
and a Role that held nothing else is not rendered at all.
"""

from __future__ import annotations

import copy
from typing import Literal
from collections.abc import Iterable

from gpu_operator.config.clusterpolicy.driver import DriverManagerSpec
from gpu_operator.config.kube import EnvVar
from gpu_operator.render.context import MANAGED_BY, RenderContext
from gpu_operator.render.k8s import (
    Object,
    cluster_role,
    cluster_role_binding,
    env,
    mount,
    privileged,
    role,
    role_binding,
    rule,
    service_account,
)
from gpu_operator.render.operands.common import SHELL, VALIDATIONS_DIR, node_name_env
from gpu_operator.render.operands.driver_manager import driver_manager_init, pull_secrets_of
from gpu_operator.render.transforms import merge_env

__all__ = [
    "SANDBOX_PLUGIN_ROLE_RULES",
    "SANDBOX_PLUGIN_CLUSTER_RULES",
    "SandboxMode",
    "VALIDATIONS_VOLUME",
    "WORKLOAD_TYPE_FILE",
    "sandbox_operand_enabled",
    "operand_rbac",
    "validator_invocation",
    "validator_init",
    "workload_gate_init",
    "any_file_gate_init",
    "sandbox_driver_manager_init",
    "driver_manager_pull_secrets",
    "relabel_daemonset",
    "privileged_s0",
]

SandboxMode = Literal["kubevirt", "kata"]

#: The hostPath volume name NVIDIA uses for `/run/nvidia/validations` in the sandbox operands.
VALIDATIONS_VOLUME = "run-nvidia-validations"
#: Written by the sandbox validator: the workload config of this node (vm-passthrough or vm-vgpu).
WORKLOAD_TYPE_FILE = f"{VALIDATIONS_DIR}/workload-type"

#: The MOFED status mount the shared driver-manager builder adds; NVIDIA's vfio/vGPU managers have no RDMA
#: support and never mount it, so their pods do not define that volume.
_MELLANOX_VOLUME = "run-mellanox-drivers"


def sandbox_operand_enabled(ctx: RenderContext, enabled: bool, mode: SandboxMode | None = None) -> bool:
    """NVIDIA's state rule: sandbox on, the operand's own switch on, and (for mode-bound operands) the mode."""
    if not (ctx.sandbox_enabled and enabled):
        return False
    return mode is None or ctx.spec.sandbox_workloads.mode == mode


#: RBAC of the sandbox device plugins (KubeVirt and Kata): they manage their validation pods and NodeFeatures.
SANDBOX_PLUGIN_ROLE_RULES = [
    rule([""], ["pods"], ["create", "get", "list", "watch", "delete"]),
    rule(["nfd.k8s-sigs.io"], ["nodefeatures"], ["create", "get", "list", "watch", "update"]),
]
SANDBOX_PLUGIN_CLUSTER_RULES = [rule([""], ["nodes", "pods"], ["get"])]


def operand_rbac(
    ctx: RenderContext,
    name: str,
    *,
    role_rules: list[Object],
    cluster_rules: list[Object],
) -> list[Object]:
    """ServiceAccount, Role + RoleBinding (when any namespaced rule remains), ClusterRole + binding, all named `name`.

    The rule lists are copied: operand modules keep them as module constants.
    """
    objects = [service_account(ctx, name)]
    if role_rules:
        objects += [role(ctx, name, copy.deepcopy(role_rules)), role_binding(ctx, name)]
    if cluster_rules:
        objects += [cluster_role(name, copy.deepcopy(cluster_rules)), cluster_role_binding(ctx, name)]
    return objects


def validator_invocation(ctx: RenderContext) -> tuple[list[str], list[str]]:
    """Command and args of a validation init container: our agent, or NVIDIA's `nvidia-validator` through sh."""
    if ctx.uses_agent("validator"):
        return ctx.agent_command("validator"), []
    return list(SHELL), ["nvidia-validator"]



def privileged_s0() -> Object:
    """Privileged, with the `s0` SELinux level NVIDIA gives containers that touch host devices."""
    return privileged(seLinuxOptions={"level": "s0"})


def validator_init(
    ctx: RenderContext,
    component: str,
    *,
    mounts: list[Object],
    security: Object,
    extra_env: Iterable[EnvVar | Object] = (),
) -> Object:
    """`<component>-validation`: the validator checks one sandbox component and writes its status file.

    The image and `runAsUser: 0` come from the shared validation transform (finalize_daemonset).
    """
    command, args = validator_invocation(ctx)
    container: Object = {
        "name": f"{component}-validation",
        "image": "",
        "command": command,
        "env": [env("WITH_WAIT", True), env("COMPONENT", component), node_name_env()],
        "securityContext": security,
        "volumeMounts": mounts,
    }
    if args:
        container["args"] = args
    merge_env(container, extra_env)
    return container


def workload_gate_init(name: str, workload: str, ready_file: str, waiting_for: str) -> Object:
    """An init container that passes at once on nodes of another workload type, else waits for `ready_file`.

    Device plugins serve both passthrough and vGPU nodes; each gate only matters for one workload type, which the
    sandbox validator records in `workload-type`.
    """
    script = (
        f"while [ ! -f {WORKLOAD_TYPE_FILE} ]; do echo waiting for the workload type of this node; sleep 5; done; "
        f'if [ "$(cat {WORKLOAD_TYPE_FILE})" != "{workload}" ]; then '
        f'echo "not a {workload} node, nothing to wait for"; exit 0; fi; '
        f"while [ ! -f {VALIDATIONS_DIR}/{ready_file} ]; do echo waiting for {waiting_for}; sleep 5; done"
    )
    return {
        "name": name,
        "image": "",
        "command": list(SHELL),
        "args": [script],
        "env": [env("NVIDIA_VISIBLE_DEVICES", "void")],
        "securityContext": privileged(),
        "volumeMounts": [mount(VALIDATIONS_VOLUME, VALIDATIONS_DIR, propagation="HostToContainer")],
    }


def any_file_gate_init(name: str, ready_files: Iterable[str], waiting_for: str, propagation: str) -> Object:
    """An init container that waits until any one of `ready_files` (under the validations dir) exists."""
    tests = " || ".join(f"[ -f {VALIDATIONS_DIR}/{file} ]" for file in ready_files)
    return {
        "name": name,
        "image": "",
        "command": list(SHELL),
        "args": [f"until {tests}; do echo waiting for {waiting_for}; sleep 5; done"],
        "securityContext": privileged(),
        "volumeMounts": [mount(VALIDATIONS_VOLUME, VALIDATIONS_DIR, propagation=propagation)],
    }


def sandbox_driver_manager_init(ctx: RenderContext, spec: DriverManagerSpec) -> Object:
    """`k8s-driver-manager` for the vfio and vGPU managers: never evicts GPU pods or drains the node."""
    container = driver_manager_init(ctx, spec, gpu_pod_eviction=False)
    container["volumeMounts"] = [m for m in container["volumeMounts"] if m["name"] != _MELLANOX_VOLUME]
    return container


def driver_manager_pull_secrets(ctx: RenderContext, spec: DriverManagerSpec) -> list[Object]:
    """The pod's `imagePullSecrets` entries for the driver-manager image."""
    return [{"name": secret} for secret in pull_secrets_of(ctx, spec)]


def relabel_daemonset(ds: Object, labels: dict[str, str]) -> Object:
    """Give the DaemonSet object itself `labels` (NVIDIA labels some DaemonSets differently from their pods)."""
    ds["metadata"]["labels"] = {**labels, **MANAGED_BY}
    return ds
