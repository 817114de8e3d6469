"""state-kata-device-plugin: the Kata sandbox device plugin, `nvidia-kata-sandbox-device-plugin-daemonset`.

New in GPU Operator v26: with `sandboxWorkloads.mode: kata`, passthrough nodes get this plugin instead of the
KubeVirt one (the operator labels them `nvidia.com/gpu.deploy.kata-sandbox-device-plugin=true`). It advertises
GPUs bound to `vfio-pci` to the kubelet and writes CDI specs for them under `/var/run/cdi`, which the Kata runtime
uses to pass the devices into the guest VM. Its only gate, `vfio-pci-validation`, waits for `vfio-pci-ready` on
`vm-passthrough` nodes, the only role that selects this plugin.

The plugin learns its node, namespace and ServiceAccount from the downward API (`NODE_NAME`, `POD_NAMESPACE`,
`POD_SERVICE_ACCOUNT`). RBAC mirrors the KubeVirt plugin: pods and NFD NodeFeatures in the namespace (the
OpenShift SCC rule is left out), nodes and pods readable cluster-wide.
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import image_path
from gpu_operator.render.k8s import Object, daemonset, deploy_selector, env_field, host_path, mount, privileged
from gpu_operator.render.operands.common import VALIDATIONS_DIR, node_name_env
from gpu_operator.render.operands.sandbox_common import (
    SANDBOX_PLUGIN_CLUSTER_RULES,
    SANDBOX_PLUGIN_ROLE_RULES,
    VALIDATIONS_VOLUME,
    operand_rbac,
    sandbox_operand_enabled,
    workload_gate_init,
)
from gpu_operator.render.transforms import finalize_daemonset

__all__ = ["STATE", "KEY", "NAME", "SERVICE_ACCOUNT", "CONTAINER", "render"]

STATE = "state-kata-device-plugin"
KEY = "kata_sandbox_device_plugin"
NAME = "nvidia-kata-sandbox-device-plugin-daemonset"
SERVICE_ACCOUNT = "nvidia-kata-sandbox-device-plugin"
CONTAINER = "nvidia-kata-sandbox-device-plugin-ctr"

def _plugin_container(ctx: RenderContext) -> Object:
    spec = ctx.spec.kata_sandbox_device_plugin
    return {
        "name": CONTAINER,
        "image": image_path(spec),
        "imagePullPolicy": spec.image_pull_policy,
        "env": [
            node_name_env(),
            env_field("POD_NAMESPACE", "metadata.namespace"),
            env_field("POD_SERVICE_ACCOUNT", "spec.serviceAccountName"),
        ],
        "securityContext": privileged(),
        "volumeMounts": [
            mount("device-plugin", "/var/lib/kubelet/device-plugins"),
            mount("cdi-root", "/var/run/cdi"),
        ],
    }


def _daemonset(ctx: RenderContext) -> Object:
    pod: Object = {
        "nodeSelector": deploy_selector("kata-sandbox-device-plugin"),
        "serviceAccountName": SERVICE_ACCOUNT,
        "initContainers": [
            workload_gate_init("vfio-pci-validation", "vm-passthrough", "vfio-pci-ready", "the vfio-pci driver"),
        ],
        "containers": [_plugin_container(ctx)],
        "volumes": [
            host_path("device-plugin", "/var/lib/kubelet/device-plugins"),
            host_path(VALIDATIONS_VOLUME, VALIDATIONS_DIR, "DirectoryOrCreate"),
            host_path("cdi-root", "/var/run/cdi", "DirectoryOrCreate"),
        ],
    }
    ds = daemonset(ctx, NAME, labels={"app": NAME}, pod_spec=pod)
    return finalize_daemonset(
        ctx, ds, section="kataSandboxDevicePlugin", spec=ctx.spec.kata_sandbox_device_plugin, main_container=CONTAINER
    )


def render(ctx: RenderContext) -> list[Object]:
    if not sandbox_operand_enabled(ctx, ctx.spec.kata_sandbox_device_plugin.enabled, mode="kata"):
        return []
    rbac = operand_rbac(
        ctx, SERVICE_ACCOUNT, role_rules=SANDBOX_PLUGIN_ROLE_RULES, cluster_rules=SANDBOX_PLUGIN_CLUSTER_RULES
    )
    return [*rbac, _daemonset(ctx)]
