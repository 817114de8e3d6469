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
_DURATION = re.compile(r"^(?:([0-9]+)h)?(?:([0-9]+)m(?!s))?(?:([0-9]+)s)?(?:([0-9]+)ms)?\Z")


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


#: Tags that move: a new push under the same name changes what nodes run (`latest-ubuntu22.04` is what
#: `driver.version: latest` renders, NVIDIA's driver tags carrying the node OS after the version).
_MOVING_TAGS = re.compile(r"^(latest|stable|edge|main|master|nightly|dev)(-.+)?\Z")
#: The config key that sets the tag of NVIDIA's operand images, by image name (where one section owns the name).
_VERSION_KEYS = {
    "driver": "operator.driver.version",
    "container-toolkit": "operator.toolkit.version",
    "dcgm": "operator.dcgm.version",
    "dcgm-exporter": "operator.dcgmExporter.version",
    "k8s-mig-manager": "operator.migManager.version",
    "k8s-driver-manager": "operator.driver.manager.version",
    "vgpu-manager": "operator.vgpuManager.version",
    "vgpu-device-manager": "operator.vgpuDeviceManager.version",
    "k8s-cc-manager": "operator.ccManager.version",
    "nvidia-fs": "operator.gds.version",
    "gdrdrv": "operator.gdrcopy.version",
}


def _version_key(image: str, agents_images: set[str]) -> str:
    """The config key that pins an image: the agents image's tag, or the version of the NVIDIA operand's section."""
    if image in agents_images:
        return "agents.image.tag (or agents.image.digest)"
    name = image.rsplit("/", 1)[-1].split(":", 1)[0]
    return _VERSION_KEYS.get(name, "operator.<section>.version of its operand")


def _unpinned_images(objects: list[Object], _context: PolicyContext) -> _Found:
    pods = [(obj, container) for obj in objects for pod in pod_templates(obj) for container in containers(pod)]
    # the agents image is the one that runs `gpu-operator-agent` somewhere (its pods' other containers run a shell)
    agents = {str(c.get("image", "")) for _, c in pods if (c.get("command") or [None])[0] == "gpu-operator-agent"}
    for obj, container in pods:
        image = str(container.get("image", ""))
        name = image.rsplit("/", 1)[-1]
        if "@" in name:
            continue
        where = f"container {container.get('name')!r}: image {image!r}"
        if ":" not in name:
            yield obj, f"{where} has no tag or digest: pin it with {_version_key(image, agents)}"
        elif _MOVING_TAGS.match(name.rsplit(":", 1)[1]):
            yield obj, (f"{where} is tagged {name.rsplit(':', 1)[1]!r}, which moves: pin it with "
                        f"{_version_key(image, agents)}")


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


#: The ClusterPolicy section whose `resources` reach an operand DaemonSet's containers, by DaemonSet name (NVIDIA's
#: names; a driver DaemonSet per OS or kernel carries a suffix, the MPS control daemon takes the device plugin's).
_RESOURCE_SECTIONS = (
    ("nvidia-driver-daemonset", "driver"),
    ("nvidia-container-toolkit-daemonset", "toolkit"),
    ("nvidia-operator-validator", "validator"),
    ("nvidia-sandbox-validator", "validator"),
    ("nvidia-device-plugin-daemonset", "devicePlugin"),
    ("nvidia-device-plugin-mps-control-daemon", "devicePlugin"),
    ("nvidia-dcgm-exporter", "dcgmExporter"),
    ("nvidia-dcgm", "dcgm"),
    ("gpu-feature-discovery", "gfd"),
    ("nvidia-mig-manager", "migManager"),
    ("nvidia-node-status-exporter", "nodeStatusExporter"),
    ("nvidia-vgpu-manager-daemonset", "vgpuManager"),
    ("nvidia-vgpu-device-manager", "vgpuDeviceManager"),
    ("nvidia-vfio-manager", "vfioManager"),
    ("nvidia-sandbox-device-plugin-daemonset", "sandboxDevicePlugin"),
    ("nvidia-kata-sandbox-device-plugin-daemonset", "kataSandboxDevicePlugin"),
    ("nvidia-cc-manager", "ccManager"),
)


def _resources_key(daemonset: str) -> str | None:
    """`operator.<section>.resources` for an operand DaemonSet's containers (None: not one of NVIDIA's operands)."""
    for prefix, section in _RESOURCE_SECTIONS:
        if daemonset == prefix or daemonset.startswith(f"{prefix}-"):
            return f"operator.{section}.resources"
    return None


def _no_requests(objects: list[Object], context: PolicyContext) -> _Found:
    # NVIDIA's chart requests nothing for its operands, so on its defaults this is advice for production stacks only
    if not context.production:
        return
    for obj in objects:
        if obj.get("kind") != "DaemonSet":
            continue
        key = _resources_key(obj["metadata"].get("name", ""))
        fix = f"set {key}.requests" if key else "set the container's resources.requests"
        for pod in pod_templates(obj):
            missing = [str(c.get("name")) for c in pod.get("containers") or []
                       if not (c.get("resources") or {}).get("requests")]
            if missing:
                names = ", ".join(repr(name) for name in missing)
                verb = "request" if len(missing) > 1 else "requests"
                noun = "containers" if len(missing) > 1 else "container"
                yield obj, f"{noun} {names} {verb} no resources: {fix}"


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
           Enforcement.MANDATORY,
           "Pin the image to a version tag or @sha256 digest with the key the finding names: agents.image.tag or "
           "agents.image.digest for the agents image, operator.<section>.version (driver.version: a driver "
           "version such as 595.91.07, not latest) for NVIDIA's.",
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
    Policy("operand-resource-requests",
           "Operand containers request resources, so the scheduler reserves them (with --production).",
           Severity.LOW, Enforcement.ADVISORY,
           "Set the key the finding names, e.g. operator.devicePlugin.resources: {requests: {cpu: 50m, memory: "
           "64Mi}}; it applies to every container of that operand's DaemonSet.", _no_requests),
    Policy("time-slicing-fails-requests-over-one",
           "Time-slicing configs set failRequestsGreaterThanOne.", Severity.MEDIUM, Enforcement.ADVISORY,
           "Set sharing.timeSlicing.failRequestsGreaterThanOne: true in configs.devicePlugin.",
           _time_slicing_without_guard),
    Policy("rdma-requests-ipc-lock", "Containers requesting rdma/* devices add the IPC_LOCK capability.",
           Severity.HIGH, Enforcement.MANDATORY,
           "Add securityContext.capabilities.add: [IPC_LOCK] (gpu_operator.workloads.rdma_workload does).",
           _rdma_without_ipc_lock),
)
