"""The policies over rendered objects: images, DaemonSets, scraping, resources, sharing and RDMA pods."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml

from gpu_operator.policy.context import PolicyContext
from gpu_operator.policy.model import Enforcement, Object, Policy, Severity

__all__ = ["RESOURCE_POLICIES", "containers", "pod_templates"]

_Found = Iterator[tuple[Object, str]]
_TEMPLATE_KINDS = ("DaemonSet", "Deployment", "StatefulSet", "Job", "ReplicaSet")
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$")


def pod_templates(obj: Object) -> list[dict[str, Any]]:
    """The pod specs an object runs: a Pod's own, a workload's template, a Kubeflow job's replica templates."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Pod":
        return [spec]
    if obj.get("kind") in _TEMPLATE_KINDS:
        return [((spec.get("template") or {}).get("spec")) or {}]
    if obj.get("kind") == "CronJob":
        return [(((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}]
    replicas = [value for key, value in spec.items() if key.endswith("ReplicaSpecs") and isinstance(value, dict)]
    return [((r.get("template") or {}).get("spec")) or {} for group in replicas for r in group.values()]


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]


def _unpinned_images(objects: list[Object], _context: PolicyContext) -> _Found:
    for obj in objects:
        for pod in pod_templates(obj):
            for container in containers(pod):
                image = str(container.get("image", ""))
                name = image.rsplit("/", 1)[-1]
                if "@" in name:
                    continue
                if ":" not in name:
                    yield obj, f"container {container.get('name')!r}: image {image!r} has no tag or digest"
                elif name.endswith(":latest"):
                    yield obj, f"container {container.get('name')!r}: image {image!r} is tagged latest"


def _selector_mismatch(objects: list[Object], _context: PolicyContext) -> _Found:
    for obj in objects:
        if obj.get("kind") != "DaemonSet":
            continue
        selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        labels = (((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
        missing = {k: v for k, v in selector.items() if labels.get(k) != v}
        if missing:
            yield obj, f"selector labels {missing} are not on the pod template: the DaemonSet owns no pods"


def _services(objects: list[Object]) -> list[Object]:
    return [obj for obj in objects if obj.get("kind") == "Service"]


def _monitor_without_service(objects: list[Object], _context: PolicyContext) -> _Found:
    services = _services(objects)
    for monitor in (obj for obj in objects if obj.get("kind") == "ServiceMonitor"):
        spec = monitor.get("spec") or {}
        wanted = (spec.get("selector") or {}).get("matchLabels") or {}
        namespaces = (spec.get("namespaceSelector") or {}).get("matchNames") or [monitor["metadata"].get("namespace")]
        matched = [svc for svc in services if svc["metadata"].get("namespace") in namespaces
                   and all((svc["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())]
        if not matched:
            yield monitor, f"selects no Service of this stack (labels {wanted} in {', '.join(namespaces)})"
            continue
        ports = {port.get("name") for svc in matched for port in (svc.get("spec") or {}).get("ports") or []}
        for endpoint in spec.get("endpoints") or []:
            if endpoint.get("port") and endpoint["port"] not in ports:
                yield monitor, f"endpoint port {endpoint['port']!r} is not a port of the selected Service"


def _seconds(text: str) -> float | None:
    match = _DURATION.match(text or "")
    if match is None or not any(match.groups()):
        return None
    h, m, s, ms = (int(g) if g else 0 for g in match.groups())
    return h * 3600 + m * 60 + s + ms / 1000


def _scrape_timeout(objects: list[Object], _context: PolicyContext) -> _Found:
    for monitor in (obj for obj in objects if obj.get("kind") in ("ServiceMonitor", "PodMonitor")):
        spec = monitor.get("spec") or {}
        for endpoint in [*(spec.get("endpoints") or []), *(spec.get("podMetricsEndpoints") or [])]:
            interval = _seconds(endpoint.get("interval", "30s"))
            timeout = _seconds(endpoint.get("scrapeTimeout", "10s"))
            if interval is not None and timeout is not None and timeout > interval:
                yield monitor, (f"scrapeTimeout {endpoint.get('scrapeTimeout')} is longer than the interval "
                                f"{endpoint.get('interval')}: Prometheus refuses the scrape config")


def _no_requests(objects: list[Object], _context: PolicyContext) -> _Found:
    for obj in objects:
        if obj.get("kind") != "DaemonSet":
            continue
        for pod in pod_templates(obj):
            for container in pod.get("containers") or []:
                if not (container.get("resources") or {}).get("requests"):
                    yield obj, f"container {container.get('name')!r} has no resource requests"


def _sharing_configs(obj: Object) -> Iterator[tuple[str, dict[str, Any]]]:
    for key, text in ((obj.get("data") or {}).items()):
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if isinstance(document, dict) and isinstance(document.get("sharing"), dict):
            yield key, document["sharing"]


def _time_slicing_without_guard(objects: list[Object], _context: PolicyContext) -> _Found:
    for obj in (o for o in objects if o.get("kind") == "ConfigMap"):
        for key, sharing in _sharing_configs(obj):
            slicing = sharing.get("timeSlicing") or {}
            shared = any(int(r.get("replicas", 1)) > 1 for r in slicing.get("resources") or [])
            if shared and not slicing.get("failRequestsGreaterThanOne"):
                yield obj, (f"config {key!r}: time-slicing replicas without failRequestsGreaterThanOne: a pod "
                            "asking for 2 gets 2 replicas of one GPU, not 2 GPUs")


def _rdma_without_ipc_lock(objects: list[Object], _context: PolicyContext) -> _Found:
    for obj in objects:
        for pod in pod_templates(obj):
            for container in containers(pod):
                resources = container.get("resources") or {}
                asked = {*(resources.get("limits") or {}), *(resources.get("requests") or {})}
                if not any(name.startswith("rdma/") for name in asked):
                    continue
                added = ((container.get("securityContext") or {}).get("capabilities") or {}).get("add") or []
                if "IPC_LOCK" not in added:
                    yield obj, (f"container {container.get('name')!r} requests RDMA devices without the IPC_LOCK "
                                "capability: registering memory fails")


RESOURCE_POLICIES: tuple[Policy, ...] = (
    Policy("image-pinned", "Every container image names a tag (not latest) or a digest.", Severity.HIGH,
           Enforcement.MANDATORY, "Pin the image: a version tag or @sha256 digest (operator.<section>.version).",
           _unpinned_images),
    Policy("daemonset-selector-matches-template", "A DaemonSet's selector labels are on its pod template.",
           Severity.CRITICAL, Enforcement.MANDATORY, "Put every selector label on spec.template.metadata.labels.",
           _selector_mismatch),
    Policy("servicemonitor-selects-a-service",
           "A ServiceMonitor selects a Service of the stack, by its labels and port name.", Severity.HIGH,
           Enforcement.MANDATORY, "Match the ServiceMonitor's selector and endpoint port to the exporter's Service.",
           _monitor_without_service),
    Policy("scrape-timeout-within-interval", "A scrape's timeout is not longer than its interval.",
           Severity.MEDIUM, Enforcement.MANDATORY,
           "Lower serviceMonitor.scrapeTimeout or raise serviceMonitor.interval.", _scrape_timeout),
    Policy("operand-resource-requests", "Operand containers request resources, so the scheduler reserves them.",
           Severity.LOW, Enforcement.ADVISORY, "Set operator.<section>.resources.requests.", _no_requests),
    Policy("time-slicing-fails-requests-over-one",
           "Time-slicing configs set failRequestsGreaterThanOne.", Severity.MEDIUM, Enforcement.ADVISORY,
           "Set sharing.timeSlicing.failRequestsGreaterThanOne: true in configs.devicePlugin.",
           _time_slicing_without_guard),
    Policy("rdma-requests-ipc-lock", "Containers requesting rdma/* devices add the IPC_LOCK capability.",
           Severity.HIGH, Enforcement.MANDATORY,
           "Add securityContext.capabilities.add: [IPC_LOCK] (gpu_operator.workloads.rdma_workload does).",
           _rdma_without_ipc_lock),
)
