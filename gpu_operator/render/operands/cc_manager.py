"""state-cc-manager: `nvidia-cc-manager` switches GPUs into or out of confidential-computing (CC) mode.

Confidential containers run in Kata VMs, so since GPU Operator v26 the CC manager only deploys with
`sandboxWorkloads.mode: kata`. It applies `ccManager.defaultMode` (`on`, `off` or `devtools`, env
`DEFAULT_CC_MODE`) to every CC-capable GPU unless the node's `nvidia.com/cc.mode` label asks otherwise, and
signals readiness with `/run/nvidia/validations/.cc-manager-ctr-ready`, which the sandbox validator's
`cc-manager-validation` waits for; the preStop hook removes that file so a restart re-gates the node.

It schedules on nodes labelled `nvidia.com/gpu.deploy.cc-manager=true`, as in v26 (v25.10 also required
`nvidia.com/cc.capable=true`, a label nothing sets since NVIDIA dropped its NFD rule).
Pods are selected by `name=nvidia-cc-manager`; the DaemonSet itself carries `app=nvidia-cc-manager`. NVIDIA's
Role also grants OpenShift's `privileged` SCC, which is left out.
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import image_path
from gpu_operator.render.k8s import Object, daemonset, deploy_selector, env, host_path, mount, rule
from gpu_operator.render.operands.common import VALIDATIONS_DIR, node_name_env
from gpu_operator.render.operands.sandbox_common import (
    operand_rbac,
    privileged_s0,
    relabel_daemonset,
    sandbox_operand_enabled,
)
from gpu_operator.render.transforms import finalize_daemonset

__all__ = ["STATE", "KEY", "NAME", "READY_FILE", "render"]

STATE = "state-cc-manager"
KEY = "cc_manager"
NAME = "nvidia-cc-manager"
READY_FILE = f"{VALIDATIONS_DIR}/.cc-manager-ctr-ready"

_ROLE_RULES = [rule([""], ["pods"], ["get", "list", "watch"])]
_CLUSTER_RULES = [rule([""], ["nodes"], ["get", "list", "patch", "watch"])]


def _manager_container(ctx: RenderContext) -> Object:
    spec = ctx.spec.cc_manager
    return {
        "name": NAME,
        "image": image_path(spec),
        "imagePullPolicy": spec.image_pull_policy,
        "env": [node_name_env(), env("NVIDIA_VISIBLE_DEVICES", "void"), env("DEFAULT_CC_MODE", spec.default_mode)],
        "resources": {"limits": {"memory": "200Mi"}, "requests": {"cpu": "100m", "memory": "200Mi"}},
        "securityContext": privileged_s0(),
        "volumeMounts": [mount("host-sys", "/sys"), mount("run-nvidia", "/run/nvidia")],
        "lifecycle": {"preStop": {"exec": {"command": ["/bin/rm", "-f", READY_FILE]}}},
    }


def _daemonset(ctx: RenderContext) -> Object:
    pod: Object = {
        "nodeSelector": deploy_selector("cc-manager"),
        "serviceAccountName": NAME,
        "containers": [_manager_container(ctx)],
        "terminationGracePeriodSeconds": 30,
        "volumes": [
            host_path("host-sys", "/sys", "Directory"),
            host_path("run-nvidia", "/run/nvidia", "DirectoryOrCreate"),
        ],
    }
    pod_labels = {"name": NAME}
    ds = relabel_daemonset(daemonset(ctx, NAME, labels=pod_labels, selector=pod_labels, pod_spec=pod), {"app": NAME})
    return finalize_daemonset(ctx, ds, section="ccManager", spec=ctx.spec.cc_manager, main_container=NAME)


def render(ctx: RenderContext) -> list[Object]:
    if not sandbox_operand_enabled(ctx, ctx.spec.cc_manager.enabled, mode="kata"):
        return []
    return [*operand_rbac(ctx, NAME, role_rules=_ROLE_RULES, cluster_rules=_CLUSTER_RULES), _daemonset(ctx)]
