"""state-sandbox-device-plugin: NVIDIA's KubeVirt GPU device plugin, `nvidia-sandbox-device-plugin-daemonset`.

With `sandboxWorkloads.mode: kubevirt` (the default), this plugin advertises whole GPUs bound to `vfio-pci`
(passthrough nodes) and mediated vGPU devices (vGPU nodes) to the kubelet, so KubeVirt VMs can request them.
It serves both node roles, so each of its two gates first reads the `workload-type` file the sandbox validator
writes and only waits when it concerns this node: `vfio-pci-validation` for `vm-passthrough` (waits for
`vfio-pci-ready`) and `vgpu-devices-validation` for `vm-vgpu` (waits for `vgpu-devices-ready`). It also writes
CDI specs for the devices under `/var/run/cdi`.

NVIDIA's Role lets the plugin manage pods and NFD NodeFeature objects in the operator namespace (plus OpenShift's
`privileged` SCC, left out here); its ClusterRole reads nodes and pods.
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import image_path
from gpu_operator.render.k8s import Object, daemonset, deploy_selector, host_path, mount, privileged
from gpu_operator.render.operands.common import VALIDATIONS_DIR
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

STATE = "state-sandbox-device-plugin"
KEY = "sandbox_device_plugin"
NAME = "nvidia-sandbox-device-plugin-daemonset"
SERVICE_ACCOUNT = "nvidia-sandbox-device-plugin"
CONTAINER = "nvidia-sandbox-device-plugin-ctr"

def _plugin_container(ctx: RenderContext) -> Object:
    spec = ctx.spec.sandbox_device_plugin
    return {
        "name": CONTAINER,
        "image": image_path(spec),
        "imagePullPolicy": spec.image_pull_policy,
        "securityContext": privileged(),
        "volumeMounts": [
            mount("device-plugin", "/var/lib/kubelet/device-plugins"),
            mount("vfio", "/dev/vfio"),
            mount("cdi-root", "/var/run/cdi"),
        ],
    }


def _daemonset(ctx: RenderContext) -> Object:
    pod: Object = {
        "nodeSelector": deploy_selector("sandbox-device-plugin"),
        "serviceAccountName": SERVICE_ACCOUNT,
        "initContainers": [
            workload_gate_init("vfio-pci-validation", "vm-passthrough", "vfio-pci-ready", "the vfio-pci driver"),
            workload_gate_init("vgpu-devices-validation", "vm-vgpu", "vgpu-devices-ready", "vGPU devices"),
        ],
        "containers": [_plugin_container(ctx)],
        "volumes": [
            host_path("device-plugin", "/var/lib/kubelet/device-plugins"),
            host_path(VALIDATIONS_VOLUME, VALIDATIONS_DIR, "DirectoryOrCreate"),
            host_path("vfio", "/dev/vfio"),
            host_path("cdi-root", "/var/run/cdi", "DirectoryOrCreate"),
        ],
    }
    ds = daemonset(ctx, NAME, labels={"app": NAME}, pod_spec=pod)
    return finalize_daemonset(
        ctx, ds, section="sandboxDevicePlugin", spec=ctx.spec.sandbox_device_plugin, main_container=CONTAINER
    )


def render(ctx: RenderContext) -> list[Object]:
    if not sandbox_operand_enabled(ctx, ctx.spec.sandbox_device_plugin.enabled, mode="kubevirt"):
        return []
    rbac = operand_rbac(
        ctx, SERVICE_ACCOUNT, role_rules=SANDBOX_PLUGIN_ROLE_RULES, cluster_rules=SANDBOX_PLUGIN_CLUSTER_RULES
    )
    return [*rbac, _daemonset(ctx)]
