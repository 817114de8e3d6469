"""Pre-requisites: the operator namespace and the RuntimeClasses GPU pods run under.

NVIDIA's chart leaves the namespace to `helm install --create-namespace`; a Pulumi stack owns it. With
`psa.enabled` the namespace is labelled `privileged` for Pod Security Admission (enforce/audit/warn), because
the driver, toolkit and most operands need host access. RuntimeClass `nvidia` (handler `nvidia`) always exists;
with CDI, `nvidia-cdi` and `nvidia-legacy` too; with the NRI plugin none, as pods are then annotated instead.
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.k8s import Object, metadata

__all__ = ["STATE", "KEY", "render", "namespace", "runtime_classes"]

STATE = "pre-requisites"
KEY = "prerequisites"
_PSA_MODES = ("enforce", "audit", "warn")


def namespace(ctx: RenderContext) -> Object:
    labels = {f"pod-security.kubernetes.io/{mode}": "privileged" for mode in _PSA_MODES} if ctx.spec.psa.enabled else {}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(ctx.namespace, labels=labels)}


def _runtime_class(name: str) -> Object:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": metadata(name, labels={"app.kubernetes.io/component": "gpu-operator"}),
        "handler": name,
    }


def runtime_classes(ctx: RenderContext) -> list[Object]:
    if ctx.nri_plugin:
        return []
    names = [ctx.spec.operator.runtime_class]
    if ctx.cdi_enabled:
        names += ["nvidia-cdi", "nvidia-legacy"]
    return [_runtime_class(name) for name in dict.fromkeys(names)]


def render(ctx: RenderContext) -> list[Object]:
    return [namespace(ctx), *runtime_classes(ctx)]
