"""The policies that need the fleet's context or span the stack: privilege, PSA, taints, NICs, Prometheus, memory.

* Only NVIDIA's operand DaemonSets may run privileged containers (:data:`PRIVILEGED_OPERANDS`); a privileged
  workload, or an unknown DaemonSet, is a violation.
* A namespace that runs privileged pods says so to Pod Security Admission (`enforce: privileged`); advisory, as
  NVIDIA's chart leaves `psa.enabled` off and AKS enforces no PSA level by default.
* A pod asking for GPUs tolerates every taint of at least one GPU pool; one asking for `rdma/ib` asks for no more
  than a node's InfiniBand NICs (the SR-IOV plugin advertises one per NIC).
* Every ServiceMonitor, PodMonitor and PrometheusRule carries the labels the Prometheus selects by.
* NVIDIA's metrics exporter has a memory limit that fits the largest node's GPUs (users report 450-500 MiB on 8
  GPUs; the chart's 512 MiB limit OOM-kills it).
* The NicClusterPolicy lets the DOCA-OFED container compile (memory limit of at least 1 GiB), and each RDMA
  device-plugin resource selects some devices (a config that advertises 0 RDMA devices looks healthy).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from gpu_operator.policy.context import PolicyContext
from gpu_operator.policy.model import Enforcement, Object, Policy, Severity, chart_name
from gpu_operator.policy.resources import containers, pod_templates
from gpu_operator.render.quantity import QuantityError, quantity_value

__all__ = ["FLEET_POLICIES", "PRIVILEGED_OPERANDS"]

_Found = Iterator[tuple[Object, str]]

#: NVIDIA's operand DaemonSets that run privileged containers (driver DaemonSets also per kernel / OS suffix).
PRIVILEGED_OPERANDS = re.compile(
    r"^(nvidia-driver-daemonset(-.+)?|nvidia-container-toolkit-daemonset|nvidia-operator-validator(-dra)?"
    r"|nvidia-device-plugin-daemonset|nvidia-device-plugin-mps-control-daemon|gpu-feature-discovery"
    r"|nvidia-dcgm|nvidia-dcgm-exporter|nvidia-mig-manager|nvidia-node-status-exporter|nvidia-cc-manager"
    r"|nvidia-(kata-)?sandbox-device-plugin-daemonset|nvidia-sandbox-validator|nvidia-vfio-manager"
    r"|nvidia-vgpu-device-manager|nvidia-vgpu-manager-daemonset)$"
)
_PSA = "pod-security.kubernetes.io/enforce"
_MONITORING = ("ServiceMonitor", "PodMonitor", "PrometheusRule")
_MIB = 1 << 20
#: NVIDIA's exporter's working set, about 62 MiB per GPU (450-500 MiB reported on 8), with a quarter of headroom.
_NVIDIA_EXPORTER_MIB_PER_GPU = 80


def _privileged(container: Mapping[str, Any]) -> bool:
    return bool((container.get("securityContext") or {}).get("privileged"))


def _unexpected_privilege(objects: list[Object], _context: PolicyContext) -> _Found:
    for obj in objects:
        allowed = obj.get("kind") == "DaemonSet" and PRIVILEGED_OPERANDS.match(obj["metadata"].get("name", ""))
        if allowed:
            continue
        for pod in pod_templates(obj):
            for container in containers(pod):
                if _privileged(container):
                    yield obj, f"container {container.get('name')!r} is privileged, and this is no GPU operand"


def _namespace_without_psa(objects: list[Object], _context: PolicyContext) -> _Found:
    namespaces = {obj["metadata"]["name"]: obj for obj in objects if obj.get("kind") == "Namespace"}
    flagged: set[str] = set()
    for obj in objects:
        namespace = (obj.get("metadata") or {}).get("namespace")
        if namespace not in namespaces or namespace in flagged:
            continue
        if any(_privileged(c) for pod in pod_templates(obj) for c in containers(pod)):
            labels = namespaces[namespace]["metadata"].get("labels") or {}
            if labels.get(_PSA) != "privileged":
                flagged.add(namespace)
                yield namespaces[namespace], f"runs privileged pods ({obj['metadata']['name']}) without {_PSA}: privileged"


def _tolerates(tolerations: list[Mapping[str, Any]], taint: Mapping[str, str]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint["effect"]:
            continue
        if toleration.get("operator") == "Exists" and toleration.get("key") in (None, "", taint["key"]):
            return True
        if toleration.get("key") == taint["key"] and toleration.get("value", "") == taint["value"]:
            return True
    return False


def _count(quantity: object) -> int:
    """A whole-number quantity (`8`, `1k`), 0 when it is none."""
    if not isinstance(quantity, str | int):
        return 0
    try:
        value = quantity_value(quantity)
    except QuantityError:
        return 0
    return int(min(value, Decimal(1 << 63))) if value == value.to_integral_value() else 0


def _asks_for(pod: Mapping[str, Any], prefix: str) -> int:
    total = 0
    for container in containers(dict(pod)):
        resources = container.get("resources") or {}
        for name, quantity in {**(resources.get("requests") or {}), **(resources.get("limits") or {})}.items():
            if name.startswith(prefix):
                total = max(total, _count(quantity))
    return total


def _gpu_pod_without_pool_toleration(objects: list[Object], context: PolicyContext) -> _Found:
    pools = [taints for taints in context.pool_taints if taints]
    if not pools or len(pools) < len(context.pool_taints):
        return  # a pool without taints takes any GPU pod
    for obj in objects:
        if obj.get("kind") == "DaemonSet":
            continue
        for pod in pod_templates(obj):
            if not _asks_for(pod, "nvidia.com/gpu"):
                continue
            tolerations = pod.get("tolerations") or []
            if not any(all(_tolerates(tolerations, taint) for taint in taints) for taints in pools):
                wanted = ", ".join(f"{t['key']}={t['value']}:{t['effect']}" for t in pools[0])
                yield obj, f"asks for GPUs but tolerates no GPU pool's taints (e.g. {wanted}): it never schedules"


def _rdma_over_nics(objects: list[Object], context: PolicyContext) -> _Found:
    if context.max_infiniband_nics is None:
        return
    for obj in objects:
        for pod in pod_templates(obj):
            asked = _asks_for(pod, "rdma/ib")
            if asked > context.max_infiniband_nics:
                yield obj, (f"asks for {asked} rdma/ib, more than the {context.max_infiniband_nics} InfiniBand NICs "
                            "of the fleet's largest node: it never schedules")


def _monitor_without_selector_labels(objects: list[Object], context: PolicyContext) -> _Found:
    if not context.prometheus_selector:
        return
    for obj in (o for o in objects if o.get("kind") in _MONITORING):
        labels = obj["metadata"].get("labels") or {}
        missing = {k: v for k, v in context.prometheus_selector.items() if labels.get(k) != v}
        if missing:
            yield obj, f"lacks the Prometheus selector labels {missing}: no Prometheus loads it"


def _mebibytes(quantity: object) -> float | None:
    """A memory quantity in MiB (`1Gi` → 1024, `1G` → 953.67...), None when it is no quantity."""
    if not isinstance(quantity, str | int):
        return None
    try:
        return float(quantity_value(quantity, resource_list=True)) / _MIB
    except QuantityError:
        return None


def _exporter_memory(objects: list[Object], context: PolicyContext) -> _Found:
    if context.exporter_gpus is None:
        return
    need = context.exporter_gpus * _NVIDIA_EXPORTER_MIB_PER_GPU
    for obj in objects:
        if obj.get("kind") != "DaemonSet" or obj["metadata"].get("name") != "nvidia-dcgm-exporter":
            continue
        for container in containers(pod_templates(obj)[0]):
            if "gpu-operator-agent" in " ".join(container.get("command") or []):
                continue  # our exporter: its own sizing
            limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
            mib = _mebibytes(limit) if limit else None
            if mib is not None and mib < need and "dcgm-exporter" in container.get("image", ""):
                yield obj, (f"memory limit {limit} is under the ~{need} MiB dcgm-exporter needs on "
                            f"{context.exporter_gpus} GPUs: it gets OOM-killed")


#: DOCA-OFED compiles its modules in the container: under this much memory the compile is OOM-killed
#: (reference/network-aks.md §6 reports pods with a 50 Mi limit crash-looping).
_OFED_MIN_MIB = 1024


def _ofed_memory(objects: list[Object], _context: PolicyContext) -> _Found:
    for obj in (o for o in objects if o.get("kind") == "NicClusterPolicy"):
        for resources in ((obj.get("spec") or {}).get("ofedDriver") or {}).get("containerResources") or []:
            limit = (resources.get("limits") or {}).get("memory")
            mib = _mebibytes(limit) if limit else None
            if mib is not None and mib < _OFED_MIN_MIB:
                yield obj, (f"{resources.get('name')}: memory limit {limit} is under {_OFED_MIN_MIB} MiB: compiling "
                            "the DOCA-OFED modules is OOM-killed and the pod crash-loops")


def _rdma_plugin_selects_nothing(objects: list[Object], _context: PolicyContext) -> _Found:
    import json

    for obj in (o for o in objects if o.get("kind") == "NicClusterPolicy"):
        spec = obj.get("spec") or {}
        for plugin in ("sriovDevicePlugin", "rdmaSharedDevicePlugin"):
            text = (spec.get(plugin) or {}).get("config")
            if not text:
                continue
            try:
                config = json.loads(text)
            except ValueError:
                yield obj, f"{plugin}.config is not JSON: the plugin advertises nothing"
                continue
            entries = config.get("resourceList") or config.get("configList") or []
            if not entries:
                yield obj, f"{plugin}.config lists no resource: the plugin advertises 0 RDMA devices"
            for entry in entries:
                selectors = entry.get("selectors") or []
                if isinstance(selectors, dict):  # the shared plugin's one selector object; SR-IOV's is a list
                    selectors = [selectors]
                if not any((s or {}).get(k) for s in selectors or [] for k in ("vendors", "deviceIDs", "drivers",
                                                                                "ifNames", "pciAddresses")):
                    yield obj, (f"{plugin} resource {entry.get('resourceName')!r} selects no device "
                                "(no vendors, deviceIDs, drivers, ifNames): it advertises 0")


def _nfd_sources(obj: Object) -> bool:
    if obj.get("kind") == "Chart":
        chart = chart_name(str(obj.get("chart", "")))
        values = obj.get("values") or {}
        if chart == "node-feature-discovery":
            return True
        # the network-operator chart deploys NFD unless told not to (its default: nfd.enabled true)
        return chart == "network-operator" and (values.get("nfd") or {}).get("enabled", True) is not False
    return obj.get("kind") == "DaemonSet" and "nfd-worker" in obj["metadata"].get("name", "")


def _more_than_one_nfd(objects: list[Object], _context: PolicyContext) -> _Found:
    sources = [obj for obj in objects if _nfd_sources(obj)]
    for extra in sources[1:]:
        yield extra, (f"a second Node Feature Discovery beside {sources[0].get('kind')} "
                      f"{sources[0]['metadata'].get('name')}: the two label GPU nodes against each other")


def _unlimited_upgrades(objects: list[Object], context: PolicyContext) -> _Found:
    if not context.production or context.max_parallel_upgrades != 0:
        return
    for obj in objects:
        if obj.get("kind") == "DaemonSet" and obj["metadata"].get("name", "").startswith("nvidia-driver-daemonset"):
            yield obj, "automatic driver upgrades with maxParallelUpgrades 0 drain every GPU node of production at once"
            return


FLEET_POLICIES: tuple[Policy, ...] = (
    Policy("privileged-only-gpu-operands", "Only NVIDIA's operand DaemonSets run privileged containers.",
           Severity.HIGH, Enforcement.MANDATORY, "Drop securityContext.privileged; grant the capability it needs.",
           _unexpected_privilege),
    Policy("psa-label-for-privileged-pods",
           "Namespaces running privileged pods are labelled pod-security.kubernetes.io/enforce=privileged.",
           Severity.LOW, Enforcement.ADVISORY, "Label the namespace (operator.psa / the Network Operator namespace).",
           _namespace_without_psa),
    Policy("gpu-pods-tolerate-a-gpu-pool", "Pods asking for GPUs tolerate the taints of a GPU pool.",
           Severity.HIGH, Enforcement.MANDATORY,
           "Add the pool's tolerations (gpu_operator.workloads helpers, or GpuCluster.tolerations).",
           _gpu_pod_without_pool_toleration),
    Policy("rdma-within-infiniband-nics", "rdma/ib requests fit the InfiniBand NICs of a node.", Severity.HIGH,
           Enforcement.MANDATORY, "Ask for at most one rdma/ib per NIC (rdma_workload(rdma_devices=...)).",
           _rdma_over_nics),
    Policy("monitors-carry-prometheus-selector", "Monitors and rules carry the Prometheus selector labels.",
           Severity.MEDIUM, Enforcement.MANDATORY,
           "Set operator.<exporter>.serviceMonitor.additionalLabels and monitoring.ruleLabels / monitorLabels.",
           _monitor_without_selector_labels),
    Policy("exporter-memory-fits-the-gpus", "NVIDIA's metrics exporter's memory limit fits the node's GPUs.",
           Severity.HIGH, Enforcement.MANDATORY,
           "Raise operator.dcgmExporter.resources.limits.memory (or drop it: our sizing fits the fleet).",
           _exporter_memory),
    Policy("ofed-memory-fits-the-compile", "The DOCA-OFED container may use enough memory to compile MOFED.",
           Severity.HIGH, Enforcement.MANDATORY, "Raise network.ofedDriver resources (limits.memory >= 1Gi).",
           _ofed_memory),
    Policy("rdma-plugin-selects-devices", "Each RDMA device-plugin resource selects some devices.",
           Severity.HIGH, Enforcement.MANDATORY,
           "Give the resource selectors (vendors 15b3, the IB VF deviceIDs, or ifNames): network.*DevicePlugin.",
           _rdma_plugin_selects_nothing),
    Policy("one-node-feature-discovery", "Exactly one Node Feature Discovery runs (a chart or a DaemonSet).",
           Severity.HIGH, Enforcement.MANDATORY,
           "Keep one: nfd.enabled false on the GPU operator when the Network Operator's NFD runs (its default).",
           _more_than_one_nfd),
    Policy("bounded-parallel-driver-upgrades", "A production stack upgrades drivers a few nodes at a time.",
           Severity.MEDIUM, Enforcement.ADVISORY,
           "Set operator.driver.upgradePolicy.maxParallelUpgrades (and maxUnavailable) to a small number.",
           _unlimited_upgrades),
)
