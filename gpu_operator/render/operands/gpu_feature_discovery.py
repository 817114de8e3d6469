"""gpu-feature-discovery: `gpu-feature-discovery`, which labels each GPU node with what its GPUs are.

Every 60 s (`GFD_SLEEP_INTERVAL`) it reads NVML and publishes `nvidia.com/gpu.product`, `gpu.count`, `gpu.memory`,
`cuda.driver-version.*`, MIG and sharing labels (see reference/agents.md §1): as a Node Feature Discovery
`NodeFeature` object in its own namespace (hence `NAMESPACE`, `NODE_NAME` and `POD_NAME`, and the Role on
`nfd.k8s-sigs.io/nodefeatures`), or as a file in NFD's `features.d` directory. The MIG strategy decides how MIG
devices are labelled, and the device-plugin config (the same ConfigMap and node label as the device plugin)
decides the sharing labels, including `nvidia.com/mps.capable`, which schedules the MPS control daemon.

With our agent the container runs `gpu-operator-agent feature-discovery` from the agents image and keeps the
`GFD_*` env, mounts and RBAC, but not `privileged`: it runs as root with CAP_SYS_ADMIN only and asks the runtime
for the GPUs (:mod:`gpu_operator.render.operands.agent_security`). With `agents.gpuDevices` (the default) the agent
also keeps one `GpuDevice` object per GPU: the operand then carries the CRD (:mod:`gpu_operator.render.gpu_device_crd`),
the ClusterRole rule to manage those objects, and `GFD_PUBLISH_GPU_DEVICES=true`. Without a device plugin, the plugin config
ConfigMap from `configs.devicePlugin` is created here, since GFD still reads it. Upstream also grants OpenShift's
`privileged` SCC in the Role; that rule grants nothing elsewhere and is left out.

RBAC follows whose program runs: NVIDIA's rules for NVIDIA's GFD, and for our agent only the calls it makes
(NodeFeature get, create and update, but no list or watch; its pod get; its node get, and only as the owner of
its GpuDevice objects, so without them there is no ClusterRole).
"""

from __future__ import annotations

from gpu_operator.render import gpu_device_crd
from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import operand_image
from gpu_operator.render.k8s import (
    Object,
    cluster_role,
    cluster_role_binding,
    daemonset,
    deploy_selector,
    env,
    env_field,
    host_path,
    mount,
    privileged,
    role,
    role_binding,
    rule,
    service_account,
)
from gpu_operator.render.operands.agent_security import secure_agent, secure_config_managers
from gpu_operator.render.operands.common import apply_runtime_class, node_name_env, toolkit_validation_init
from gpu_operator.render.operands.plugin_config import (
    add_config_manager_init,
    add_config_manager_sidecar,
    add_plugin_config,
    mig_env,
    plugin_config_map,
)
from gpu_operator.render.transforms import finalize_daemonset, merge_env

__all__ = ["STATE", "KEY", "NAME", "SERVICE_ACCOUNT", "FEATURES_DIR", "render"]

STATE = "gpu-feature-discovery"
KEY = "gpu_feature_discovery"
SECTION = "gfd"
NAME = "gpu-feature-discovery"
SERVICE_ACCOUNT = "nvidia-gpu-feature-discovery"
FEATURES_DIR = "/etc/kubernetes/node-feature-discovery/features.d"
_LABELS = {"app": NAME, "app.kubernetes.io/part-of": "nvidia-gpu"}


def _publishes_gpu_devices(ctx: RenderContext) -> bool:
    return ctx.uses_agent(SECTION) and ctx.config.agents.gpu_devices


def _command(ctx: RenderContext) -> list[str]:
    return ctx.agent_command(SECTION) if ctx.uses_agent(SECTION) else ["gpu-feature-discovery"]


def _signalled_process(ctx: RenderContext) -> str:
    """The process the config-manager sidecar sends SIGHUP to after switching configs."""
    return " ".join(_command(ctx))


def _main_container(ctx: RenderContext) -> Object:
    return {
        "name": NAME,
        "image": operand_image(ctx, SECTION, ctx.spec.gfd),
        "command": _command(ctx),
        "env": [
            env("GFD_SLEEP_INTERVAL", "60s"),
            env("GFD_FAIL_ON_INIT_ERROR", True),
            env_field("NAMESPACE", "metadata.namespace"),
            node_name_env(),
            env_field("POD_NAME", "metadata.name"),
        ],
        "volumeMounts": [mount("output-dir", FEATURES_DIR), mount("host-sys", "/sys", read_only=True)],
        "securityContext": privileged(),
    }


def _daemonset(ctx: RenderContext) -> Object:
    main = _main_container(ctx)
    pod: Object = {
        "nodeSelector": deploy_selector("gpu-feature-discovery"),
        "serviceAccountName": SERVICE_ACCOUNT,
        "initContainers": [toolkit_validation_init("run-nvidia", "/run/nvidia")],
        "containers": [main],
        "volumes": [
            host_path("output-dir", FEATURES_DIR),
            host_path("host-sys", "/sys"),
            host_path("run-nvidia", "/run/nvidia", "Directory"),
        ],
    }
    ds = daemonset(ctx, NAME, labels=_LABELS, selector=_LABELS, pod_spec=pod)
    # before the sidecar joins: NVIDIA annotates only the GFD container for NRI injection
    apply_runtime_class(ctx, pod, ds["spec"]["template"]["metadata"])
    add_config_manager_init(ctx, pod, SECTION)
    add_config_manager_sidecar(ctx, pod, SECTION, process=_signalled_process(ctx))
    add_plugin_config(ctx, pod, main)
    merge_env(main, mig_env(ctx))
    if _publishes_gpu_devices(ctx):
        merge_env(main, [env("GFD_PUBLISH_GPU_DEVICES", True)])
    secure_agent(ctx, SECTION, main, ctx.spec.gfd.env)
    secure_config_managers(ctx, SECTION, pod)
    return finalize_daemonset(ctx, ds, section=SECTION, spec=ctx.spec.gfd, main_container=NAME)


def _rbac(ctx: RenderContext) -> list[Object]:
    publishes = _publishes_gpu_devices(ctx)
    if ctx.uses_agent(SECTION):
        # the agent's calls: NodeFeature get, then create or replace; its pod read once for the owner references;
        # with GpuDevice objects, its node read once as their owner (gpu_operator/agents/feature_discovery)
        namespaced = [
            rule(["nfd.k8s-sigs.io"], ["nodefeatures"], ["get", "create", "update"]),
            rule([""], ["pods"], ["get"]),
        ]
        cluster_rules = [rule([""], ["nodes"], ["get"])] if publishes else []
    else:
        namespaced = [
            rule(["nfd.k8s-sigs.io"], ["nodefeatures"], ["get", "list", "watch", "create", "update"]),
            rule([""], ["pods"], ["get"]),
        ]
        cluster_rules = [rule([""], ["nodes"], ["get", "list", "watch"])]
    if publishes:
        verbs = ["get", "list", "create", "update", "delete"]
        cluster_rules.append(rule([gpu_device_crd.GROUP], [gpu_device_crd.PLURAL], verbs))
    objects = [service_account(ctx, SERVICE_ACCOUNT), role(ctx, SERVICE_ACCOUNT, namespaced), role_binding(ctx, SERVICE_ACCOUNT)]
    if cluster_rules:
        objects += [cluster_role(SERVICE_ACCOUNT, cluster_rules), cluster_role_binding(ctx, SERVICE_ACCOUNT)]
    return objects


def render(ctx: RenderContext) -> list[Object]:
    if not ctx.spec.gfd.enabled:
        return []
    objects = [gpu_device_crd.gpu_device_crd()] if _publishes_gpu_devices(ctx) else []
    objects += _rbac(ctx)
    user_configs = None if ctx.spec.device_plugin.enabled else plugin_config_map(ctx)
    if user_configs is not None:
        objects.append(user_configs)
    objects.append(_daemonset(ctx))
    return objects
