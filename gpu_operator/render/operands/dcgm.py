"""state-dcgm: the standalone DCGM host engine, `nvidia-dcgm`, and its node-local Service.

Off by default: the DCGM exporter embeds its own host engine. When enabled, the exporter connects to
`nvidia-dcgm:5555` instead, and the Service keeps that traffic on the node (`internalTrafficPolicy: Local`).
Upstream also creates a Role granting only OpenShift's `privileged` SCC; on other clusters it grants nothing, so
we create the ServiceAccount alone.
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import image_path
from gpu_operator.render.k8s import Object, daemonset, deploy_selector, host_path, privileged, service, service_account
from gpu_operator.render.operands.common import apply_runtime_class, toolkit_validation_init
from gpu_operator.render.transforms import finalize_daemonset

__all__ = ["STATE", "KEY", "NAME", "PORT", "render"]

STATE = "state-dcgm"
KEY = "dcgm"
NAME = "nvidia-dcgm"
PORT = 5555


def _tcp_probe() -> Object:
    return {"tcpSocket": {"port": PORT}, "initialDelaySeconds": 15}


def _daemonset(ctx: RenderContext) -> Object:
    spec = ctx.spec.dcgm
    pod: Object = {
        "nodeSelector": deploy_selector("dcgm"),
        "serviceAccountName": NAME,
        "initContainers": [toolkit_validation_init("run-nvidia", "/run/nvidia")],
        "containers": [
            {
                "name": "nvidia-dcgm-ctr",
                "image": image_path(spec),
                "securityContext": privileged(),
                "ports": [{"name": "dcgm", "containerPort": PORT}],
                "livenessProbe": _tcp_probe(),
                "readinessProbe": _tcp_probe(),
            }
        ],
        "volumes": [host_path("run-nvidia", "/run/nvidia", "Directory")],
    }
    ds = daemonset(ctx, NAME, labels={"app": NAME}, pod_spec=pod)
    apply_runtime_class(ctx, pod, ds["spec"]["template"]["metadata"])
    return finalize_daemonset(ctx, ds, section="dcgm", spec=spec, main_container="nvidia-dcgm-ctr")


def _service(ctx: RenderContext) -> Object:
    return service(
        ctx,
        NAME,
        labels={"app": NAME, "app.kubernetes.io/component": NAME},
        selector={"app": NAME},
        ports=[{"name": "dcgm", "port": PORT, "protocol": "TCP"}],
        type="ClusterIP",
        internalTrafficPolicy="Local",
    )


def render(ctx: RenderContext) -> list[Object]:
    if not ctx.spec.dcgm.enabled:
        return []
    return [service_account(ctx, NAME), _daemonset(ctx), _service(ctx)]
