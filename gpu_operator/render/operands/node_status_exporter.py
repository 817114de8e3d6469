"""state-node-status-exporter: `nvidia-node-status-exporter`, the GPU stack's health per node on port 8000.

It is the validator program in metrics mode (`nvidia-validator` with `COMPONENT=metrics`): gauges such as
`gpu_operator_node_driver_ready`, `gpu_operator_node_toolkit_ready` and
`gpu_operator_node_device_plugin_devices_total`, labelled with the node, read from the status files in
`/run/nvidia/validations` and the Node's capacity. It sees no GPU itself (`NVIDIA_VISIBLE_DEVICES=void`, no
runtime class) and runs as root because the status files belong to the kubelet. Off by default.

Service `nvidia-node-status-exporter` (port `node-status`) and, when the cluster has the Prometheus Operator
CRDs (`cluster.prometheusOperator`), a ServiceMonitor with job label `node-status`; NVIDIA offers no settings for
it, so it carries the labels of `monitoring` (`release: <prometheusRelease>`, `monitorLabels`) that every monitor
we render carries, or the Prometheus `serviceMonitorSelector` would skip it. With our agent the container runs `gpu-operator-agent node-status-exporter` with the same env and mounts,
and stays privileged: its driver check runs the host's `nvidia-smi` on the host's device nodes (`agent_security`).
Upstream's Role also grants OpenShift's `privileged` SCC; that rule grants nothing elsewhere and is left out.
Our agent reads only its own Node (`get`), so with it there is no Role at all (no pods, no DaemonSets) and the
ClusterRole grants `nodes get` alone; NVIDIA's program keeps NVIDIA's rules.
"""

from __future__ import annotations

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
    metadata,
    mount,
    privileged,
    role,
    role_binding,
    rule,
    service,
    service_account,
)
from gpu_operator.render.operands.agent_security import secure_agent
from gpu_operator.render.operands.common import node_name_env
from gpu_operator.render.transforms import finalize_daemonset

__all__ = ["STATE", "KEY", "NAME", "PORT", "render"]

STATE = "state-node-status-exporter"
KEY = "node_status_exporter"
SECTION = "nodeStatusExporter"
NAME = "nvidia-node-status-exporter"
PORT = 8000
LABELS = {"app": NAME}


def _container(ctx: RenderContext) -> Object:
    command = ctx.agent_command(SECTION) if ctx.uses_agent(SECTION) else ["nvidia-validator"]
    return {
        "name": NAME,
        "image": operand_image(ctx, SECTION, ctx.spec.node_status_exporter),
        "command": command,
        "env": [
            env("COMPONENT", "metrics"),
            env("METRICS_PORT", PORT),
            env("NVIDIA_VISIBLE_DEVICES", "void"),
            node_name_env(),
            # without it the validator looks for the driver DaemonSet cluster-wide, which its Role forbids
            env_field("OPERATOR_NAMESPACE", "metadata.namespace"),
        ],
        "ports": [{"name": "node-status", "containerPort": PORT}],
        "securityContext": privileged(runAsUser=0),
        "volumeMounts": [
            mount("run-nvidia", "/run/nvidia", propagation="HostToContainer"),
            mount("host-root", "/host", read_only=True, propagation="HostToContainer"),
        ],
    }


def _daemonset(ctx: RenderContext) -> Object:
    pod: Object = {
        "nodeSelector": deploy_selector("node-status-exporter"),
        "serviceAccountName": NAME,
        "containers": [_container(ctx)],
        "volumes": [host_path("run-nvidia", "/run/nvidia", "Directory"), host_path("host-root", "/")],
    }
    secure_agent(ctx, SECTION, pod["containers"][0], ctx.spec.node_status_exporter.env)
    ds = daemonset(ctx, NAME, labels=LABELS, pod_spec=pod)
    return finalize_daemonset(ctx, ds, section=SECTION, spec=ctx.spec.node_status_exporter, main_container=NAME)


def _service(ctx: RenderContext) -> Object:
    return service(
        ctx,
        NAME,
        labels=LABELS,
        selector=LABELS,
        annotations={"prometheus.io/scrape": "true"},
        ports=[{"name": "node-status", "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
    )


def _service_monitor(ctx: RenderContext) -> Object:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        # NVIDIA offers no labels here; ours carries the Prometheus selector's, as the exporter's does
        "metadata": metadata(NAME, ctx.namespace, {**LABELS, **ctx.config.monitoring.monitor_object_labels()}),
        "spec": {
            "jobLabel": "node-status",
            "namespaceSelector": {"matchNames": [ctx.namespace]},
            "selector": {"matchLabels": dict(LABELS)},
            "endpoints": [{"port": "node-status", "path": "/metrics"}],
        },
    }


def _rbac(ctx: RenderContext) -> list[Object]:
    if ctx.uses_agent(SECTION):
        # our exporter reads its own Node by name for the device-plugin capacity, and nothing else
        return [cluster_role(NAME, [rule([""], ["nodes"], ["get"])]), cluster_role_binding(ctx, NAME)]
    return [
        role(ctx, NAME, [
            rule([""], ["pods"], ["get", "list"]),
            rule(["apps"], ["daemonsets"], ["get", "list", "watch"]),
        ]),
        role_binding(ctx, NAME),
        cluster_role(NAME, [rule([""], ["nodes"], ["get", "list", "watch"])]),
        cluster_role_binding(ctx, NAME),
    ]


def render(ctx: RenderContext) -> list[Object]:
    if not ctx.spec.node_status_exporter.enabled:
        return []
    objects = [service_account(ctx, NAME), *_rbac(ctx), _service(ctx)]
    if ctx.config.cluster.prometheus_operator:
        objects.append(_service_monitor(ctx))
    objects.append(_daemonset(ctx))
    return objects
