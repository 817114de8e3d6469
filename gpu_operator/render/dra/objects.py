"""The Kubernetes objects of the DRA stack besides the chart: its namespace, the DeviceClasses, claim templates.

* the namespace (PSA `privileged`: the kubelet plugin is a privileged host pod);
* the chart's DeviceClasses as data (:func:`device_classes`): the chart creates them; we render the same objects
  to validate them, to apply them where no chart can be pulled (the e2e tier), and to evaluate claims offline;
* `dra.claimTemplates` as ResourceClaimTemplates (`resource.k8s.io/v1`), created after the chart, and the
  namespaces `dra.namespaces` asks the stack to create for them (`create`; `existing` ones are the cluster's).
"""

from __future__ import annotations

from typing import Any

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.dra import ClaimTemplate
from gpu_operator.facts.dra_driver import DEVICE_CLASSES
from gpu_operator.render.k8s import Object, metadata

__all__ = ["claim_namespaces", "device_classes", "dra_namespace", "claim_templates"]

_PSA_MODES = ("enforce", "audit", "warn")


def dra_namespace(config: GpuStackConfig) -> Object:
    labels = {f"pod-security.kubernetes.io/{mode}": "privileged" for mode in _PSA_MODES}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(config.dra.namespace, labels=labels)}


def claim_namespaces(config: GpuStackConfig) -> list[Object]:
    """The namespaces `dra.namespaces` asks the stack to create (`create`) for its claim templates."""
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(name)}
            for name, use in config.dra.namespaces.items() if use == "create"]


def device_classes(gpus: bool = True, compute_domains: bool = True) -> list[Object]:
    """The DeviceClasses the chart creates with these resources switched on (`resource.k8s.io/v1`)."""
    wanted = {"gpus": gpus, "computeDomains": compute_domains}
    objects: list[Object] = []
    for cls in DEVICE_CLASSES:
        if not wanted[cls.resources]:
            continue
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": cls.expression}}]}
        if cls.extended_resource_name is not None:
            spec["extendedResourceName"] = cls.extended_resource_name
        objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                        "metadata": {"name": cls.name}, "spec": spec})
    return objects


def _template(template: ClaimTemplate) -> Object:
    spec = template.spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    for request in spec["devices"]["requests"]:
        # `exactly`, or each alternative of `firstAvailable`, as the API server defaults it (count 1)
        for exact in [request["exactly"]] if "exactly" in request else request["firstAvailable"]:
            if exact.get("allocationMode") == "ExactCount" and "count" not in exact:
                exact["count"] = 1
            if not exact.get("selectors"):
                exact.pop("selectors", None)
    for key in ("constraints", "config"):
        if not spec["devices"].get(key):
            spec["devices"].pop(key, None)
    for entry in [*spec["devices"].get("constraints", []), *spec["devices"].get("config", [])]:
        if not entry.get("requests"):
            entry.pop("requests")
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": metadata(template.name, template.namespace),
        "spec": {"spec": spec},
    }


def claim_templates(config: GpuStackConfig) -> list[Object]:
    """`dra.claimTemplates` as ResourceClaimTemplates."""
    return [_template(template) for template in config.dra.claim_templates]
