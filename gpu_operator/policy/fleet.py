"""The policies that need the fleet's context or span the stack: privilege, PSA, taints, NICs, Prometheus, memory.

* Only NVIDIA's operand DaemonSets may run privileged containers (:data:`PRIVILEGED_OPERANDS`, with our GPU health
  monitor's host-actions helper, and the DRA driver's kubelet plugin, privileged by design); a privileged workload,
  or an unknown DaemonSet, is a violation.
* A namespace that runs privileged pods says so to Pod Security Admission (`enforce: privileged`); advisory, as
  NVIDIA's chart leaves `psa.enabled` off and AKS enforces no PSA level by default.
* A pod asking for GPUs tolerates every taint of at least one GPU pool that keeps pods off (NoSchedule,
  NoExecute; a toleration names the taint's effect or none); one asking for `rdma/ib` asks, summed over its
  containers as the scheduler sums them, for no more than a node's InfiniBand NICs (one per NIC with SR-IOV).
* Every ServiceMonitor, PodMonitor and PrometheusRule carries the labels the Prometheus selects by.
* NVIDIA's metrics exporter has a memory limit of at least dcgm-exporter's own chart's, 512 MiB (users see
  400-500 MiB with a single GPU, whatever the count).
* A driver change reaches the nodes: a driver DaemonSet that updates `OnDelete` with no operator controller
  beside it never replaces a driver pod (advisory), and in production one that rolls by itself
  (`RollingUpdate`, no controller) lacks the controller's cordon, wait for jobs and validation (advisory).
* The NicClusterPolicy lets the DOCA-OFED container compile (memory limit of at least 1 GiB, `1Gi` being 1024 MiB),
  and each RDMA device-plugin resource selects devices the way the Network Operator's webhook schemas require
  (a config that advertises 0 RDMA devices looks healthy).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from gpu_operator.facts.quantity import QuantityError, quantity_value
from gpu_operator.policy.context import PolicyContext
from gpu_operator.policy.model import Enforcement, Object, Policy, Severity, chart_name
from gpu_operator.policy.resources import containers, pod_templates

__all__ = ["FLEET_POLICIES", "PRIVILEGED_OPERANDS"]

_Found = Iterator[tuple[Object, str]]

#: NVIDIA's operand DaemonSets that run privileged containers (driver DaemonSets also per kernel / OS suffix).
PRIVILEGED_OPERANDS = re.compile(
    # the driver DaemonSets of NVIDIADrivers: nvidia-<driverType>-driver-<osTag>-<hash> (internal/state/driver.go)
    r"^(nvidia-driver-daemonset(-.+)?|nvidia-v?gpu-driver-.+|nvidia-container-toolkit-daemonset|nvidia-operator-validator(-dra)?"
    r"|nvidia-device-plugin-daemonset|nvidia-device-plugin-mps-control-daemon|gpu-feature-discovery"
    r"|nvidia-dcgm|nvidia-dcgm-exporter|nvidia-mig-manager|nvidia-node-status-exporter|nvidia-cc-manager"
    r"|nvidia-(kata-)?sandbox-device-plugin-daemonset|nvidia-sandbox-validator|nvidia-vfio-manager"
    r"|nvidia-vgpu-device-manager|nvidia-vgpu-manager-daemonset"
    # ours: the GPU health monitor's host-actions helper, rendered only where the remediation resets or reboots
    r"|gpu-health-monitor)\Z"
)
#: The DRA driver's kubelet plugin (dra-driver-nvidia-gpu templates/kubeletplugin.yaml: `<name>-kubelet-plugin`,
#: its init container and both plugin containers `privileged: true` in the chart and its values.yaml).
_DRA_CHART = "dra-driver-nvidia-gpu"
_DRA_PLUGIN_SUFFIX = "-kubelet-plugin"
_PSA = "pod-security.kubernetes.io/enforce"
_MONITORING = ("ServiceMonitor", "PodMonitor", "PrometheusRule")
_MIB = 1 << 20
#: dcgm-exporter's own Helm chart limit (deployment/values.yaml `resources.limits.memory: 512Mi`); users report
#: 400-500 MiB resident with one GPU (reference/agents.md §3.7), so nothing below it is enough for any node.
_NVIDIA_EXPORTER_MIN_MIB = 512
#: Taint effects that keep a pod off a node (the scheduler's TaintToleration filter); PreferNoSchedule does not.
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def _privileged(container: Mapping[str, Any]) -> bool:
    return bool((container.get("securityContext") or {}).get("privileged"))


def _dra_kubelet_plugin(obj: Object) -> bool:
    """The DRA driver chart's kubelet-plugin DaemonSet: `dra-driver-nvidia-gpu-kubelet-plugin`, or with the chart's
    nameOverride `<name>-kubelet-plugin` labelled `helm.sh/chart: <name>-<version>` and running the driver's image."""
    name = str(obj["metadata"].get("name", ""))
    if name == _DRA_CHART + _DRA_PLUGIN_SUFFIX:
        return True
    if not name.endswith(_DRA_PLUGIN_SUFFIX):
        return False
    base = name[:-len(_DRA_PLUGIN_SUFFIX)]
    chart = str((obj["metadata"].get("labels") or {}).get("helm.sh/chart", ""))
    images = [str(c.get("image", "")) for pod in pod_templates(obj) for c in containers(pod)]
    return chart.rsplit("-", 1)[0] == base and bool(images) and all(_DRA_CHART in image for image in images)


def _unexpected_privilege(objects: list[Object], _context: PolicyContext) -> _Found:
    for obj in objects:
        allowed = obj.get("kind") == "DaemonSet" and (
            PRIVILEGED_OPERANDS.match(obj["metadata"].get("name", "")) or _dra_kubelet_plugin(obj))
        if allowed:
            continue
        for pod in pod_templates(obj):
            for container in containers(pod):
                if _privileged(container):
                    yield obj, f"container {container.get('name')!r} is privileged, and this is no GPU operand"


def _namespace_without_psa(objects: list[Object], context: PolicyContext) -> _Found:
    """A namespace whose own PSA label refuses its privileged pods, always; one without a label (NVIDIA's chart
    default, `psa.enabled: false`: the cluster's default level applies, `privileged` unless an admission
    configuration says otherwise) only for a production stack, which should not rely on that default."""
    namespaces = {obj["metadata"]["name"]: obj for obj in objects if obj.get("kind") == "Namespace"}
    flagged: set[str] = set()
    for obj in objects:
        namespace = (obj.get("metadata") or {}).get("namespace")
        if namespace not in namespaces or namespace in flagged:
            continue
        if any(_privileged(c) for pod in pod_templates(obj) for c in containers(pod)):
            level = (namespaces[namespace]["metadata"].get("labels") or {}).get(_PSA)
            if level == "privileged" or (level is None and not context.production):
                continue
            flagged.add(namespace)
            now = f"{_PSA}: {level} refuses them" if level else f"no {_PSA} label, so the cluster's default decides"
            yield namespaces[namespace], (f"runs privileged pods ({obj['metadata']['name']}) with {now}: label it "
                                          f"privileged ({_psa_key(namespace, obj)})")


def _psa_key(namespace: str, obj: Object) -> str:
    """Where the config labels `namespace`: the operator's (`operator.psa.enabled`); the charts' are labelled."""
    name = obj["metadata"].get("name", "")
    if name.startswith(("nvidia-", "gpu-feature-discovery")):
        return "operator.psa.enabled: true"
    return f"kubectl label namespace {namespace} {_PSA}=privileged"


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


def _container_asks(container: Mapping[str, Any], prefix: str) -> int:
    """What one container asks of resources named `prefix...` (an extended resource's request is its limit)."""
    resources = container.get("resources") or {}
    asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return sum(_count(quantity) for name, quantity in asked.items() if name.startswith(prefix))


def _asks_for(pod: Mapping[str, Any], prefix: str) -> int:
    """The pod's ask as the scheduler computes it (resource.PodRequests): the containers' asks summed, or the
    largest init container's where that is more (init containers run one at a time, before the others)."""
    running = sum(_container_asks(c, prefix) for c in pod.get("containers") or [])
    init = max((_container_asks(c, prefix) for c in pod.get("initContainers") or []), default=0)
    return max(running, init)


def _gpu_pod_without_pool_toleration(objects: list[Object], context: PolicyContext) -> _Found:
    blocking = [tuple(t for t in taints if t.get("effect") in _BLOCKING_EFFECTS) for taints in context.pool_taints]
    pools = [taints for taints in blocking if taints]
    if not pools or len(pools) < len(blocking):
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


def _exporter_memory(objects: list[Object], _context: PolicyContext) -> _Found:
    need = _NVIDIA_EXPORTER_MIN_MIB
    for obj in objects:
        if obj.get("kind") != "DaemonSet" or obj["metadata"].get("name") != "nvidia-dcgm-exporter":
            continue
        for container in containers(pod_templates(obj)[0]):
            if "gpu-operator-agent" in " ".join(container.get("command") or []):
                continue  # our exporter: its own sizing
            limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
            mib = _mebibytes(limit) if limit else None
            if mib is not None and mib < need and "dcgm-exporter" in container.get("image", ""):
                yield obj, (f"memory limit {limit} is under the {need} MiB of dcgm-exporter's own chart (it uses "
                            "400-500 MiB even with one GPU): it gets OOM-killed")


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


#: What a selector of each plugin must name (Mellanox/network-operator v26.4.1 webhook-schemas, as its
#: nicpolicy_webhook.go applies them): rdma_shared_device_plugin.json `selectors.anyOf`; for SR-IOV, by
#: `deviceType`, accelerator_selector.json, net_device.json (the default) and aux_net_device.json.
_SHARED_SELECTOR_KEYS = ("vendors", "deviceIDs", "drivers", "ifNames", "linkTypes")
_SRIOV_SELECTOR_KEYS: dict[str, tuple[str, ...]] = {
    "accelerator": ("vendors", "devices", "drivers", "pciAddresses"),
    "netDevice": ("vendors", "devices", "drivers", "pciAddresses", "pfNames", "rootDevices", "linkTypes",
                  "ddpProfiles", "isRdma", "needVhostNet", "vdpaType"),
    "auxNetDevice": ("vendors", "devices", "drivers", "pfNames", "rootDevices", "linkTypes", "isRdma", "auxTypes"),
}


def _shared_entry_problem(entry: Mapping[str, Any]) -> str | None:
    """Why the webhook refuses a shared-plugin `configList` entry: neither `selectors` (naming one of its keys)
    nor `devices` (the plugin's list of netdevices)."""
    if "devices" in entry:
        return None
    selectors = entry.get("selectors")
    if isinstance(selectors, dict) and any(key in selectors for key in _SHARED_SELECTOR_KEYS):
        return None
    return f"gives neither devices nor selectors with one of {', '.join(_SHARED_SELECTOR_KEYS)}"


def _sriov_entry_problem(entry: Mapping[str, Any]) -> str | None:
    """Why the webhook refuses an SR-IOV `resourceList` entry: a selector naming none of its device type's keys."""
    device_type = str(entry.get("deviceType") or "netDevice")
    keys = _SRIOV_SELECTOR_KEYS.get(device_type, _SRIOV_SELECTOR_KEYS["netDevice"])
    selectors = entry.get("selectors")
    if selectors is None:
        return None
    for selector in selectors if isinstance(selectors, list) else [selectors]:
        if not isinstance(selector, dict) or not any(key in selector for key in keys):
            return f"has a {device_type} selector with none of {', '.join(keys)}"
    return None


def _rdma_plugin_selects_nothing(objects: list[Object], _context: PolicyContext) -> _Found:
    import json

    plugins = (("rdmaSharedDevicePlugin", "configList", _shared_entry_problem),
               ("sriovDevicePlugin", "resourceList", _sriov_entry_problem))
    for obj in (o for o in objects if o.get("kind") == "NicClusterPolicy"):
        spec = obj.get("spec") or {}
        for plugin, key, problem_of in plugins:
            text = (spec.get(plugin) or {}).get("config")
            if not text:
                continue
            try:
                config = json.loads(text)
            except ValueError:
                yield obj, f"{plugin}.config is not JSON: the plugin advertises nothing"
                continue
            entries = config.get(key) if isinstance(config, dict) else None
            if not entries or not isinstance(entries, list):
                yield obj, f"{plugin}.config lists no resource in {key}: the plugin advertises 0 RDMA devices"
                continue
            for entry in entries:
                problem = problem_of(entry) if isinstance(entry, dict) else "is no object"
                if problem is not None:
                    name = entry.get("resourceName") if isinstance(entry, dict) else None
                    yield obj, f"{plugin} resource {name!r} {problem}: the operator's webhook refuses it"


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


def _driver_daemonsets(objects: list[Object]) -> list[Object]:
    return [obj for obj in objects if obj.get("kind") == "DaemonSet"
            and obj["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "nvidia-driver"]


def _runs_the_controller(objects: list[Object]) -> bool:
    """The operator controller's Deployment (`gpu-operator-agent operator`) is among the objects."""
    return any(obj.get("kind") == "Deployment" and any(
        container.get("command", [])[:2] == ["gpu-operator-agent", "operator"]
        for pod in pod_templates(obj) for container in containers(pod)) for obj in objects)


def _driver_changes_reach_nodes(objects: list[Object], context: PolicyContext) -> _Found:
    if _runs_the_controller(objects):
        return
    for ds in _driver_daemonsets(objects):
        strategy = ds["spec"].get("updateStrategy", {}).get("type", "RollingUpdate")
        if strategy == "OnDelete":
            yield ds, ("updates OnDelete and no operator controller runs: a new driver version reaches no node "
                       "until its driver pod is deleted by hand")
        elif context.production:
            yield ds, ("rolls a new driver out by itself, without the operator controller's cordon, wait for jobs, "
                       "validation gate and pool-by-pool stages")


def _infiniband_feature_unregistered(_objects: list[Object], context: PolicyContext) -> _Found:
    """A config fact rather than an object's: reported against the AKS agent pool the stack creates."""
    for pool in context.unregistered_infiniband_pools:
        agent_pool = {"apiVersion": "containerservice.azure.com/v1", "kind": "AgentPool", "metadata": {"name": pool}}
        yield agent_pool, ("has InfiniBand, and aks.registerInfinibandFeature is not set: without the subscription "
                           "feature AKSInfinibandSupport AKS may place the pool's VMs on different InfiniBand "
                           "fabrics, and RDMA fails between some of its nodes")


FLEET_POLICIES: tuple[Policy, ...] = (
    Policy("privileged-only-gpu-operands", "Only NVIDIA's operand DaemonSets run privileged containers.",
           Severity.HIGH, Enforcement.MANDATORY, "Drop securityContext.privileged; grant the capability it needs.",
           _unexpected_privilege),
    Policy("psa-label-for-privileged-pods",
           "Namespaces running privileged pods are labelled pod-security.kubernetes.io/enforce=privileged.",
           Severity.LOW, Enforcement.ADVISORY,
           "Set operator.psa.enabled: true for the operator's namespace (the Network Operator's and the DRA "
           "driver's namespaces are labelled by the stack); unlabelled namespaces are judged with --production.",
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
           "Set monitoring.prometheusRelease to your kube-prometheus-stack release (it labels every monitor and "
           "rule), and keep ruleLabels, monitorLabels and serviceMonitor.additionalLabels from overriding it.",
           _monitor_without_selector_labels),
    Policy("exporter-memory-fits-the-gpus", "NVIDIA's metrics exporter's memory limit fits the node's GPUs.",
           Severity.HIGH, Enforcement.MANDATORY,
           "Raise operator.dcgmExporter.resources.limits.memory to 512Mi or more (or drop it: our sizing fits the "
           "fleet).",
           _exporter_memory),
    Policy("ofed-memory-fits-the-compile", "The DOCA-OFED container may use enough memory to compile MOFED.",
           Severity.HIGH, Enforcement.MANDATORY, "Raise network.ofedDriver resources (limits.memory >= 1Gi).",
           _ofed_memory),
    Policy("rdma-plugin-selects-devices", "Each RDMA device-plugin resource selects some devices.",
           Severity.HIGH, Enforcement.MANDATORY,
           "Give each resource what the Network Operator's webhook requires: shared plugin devices, or selectors "
           "with vendors (15b3), deviceIDs, drivers, ifNames or linkTypes; SR-IOV selectors with vendors, devices, "
           "drivers, pfNames, linkTypes, isRdma or another key of its deviceType (network.*DevicePlugin).",
           _rdma_plugin_selects_nothing),
    Policy("one-node-feature-discovery", "Exactly one Node Feature Discovery runs (a chart or a DaemonSet).",
           Severity.HIGH, Enforcement.MANDATORY,
           "Keep one: nfd.enabled false on the GPU operator when the Network Operator's NFD runs (its default).",
           _more_than_one_nfd),
    Policy("infiniband-feature-registered",
           "The subscription of an InfiniBand pool has AKSInfinibandSupport, so its VMs share one fabric.",
           Severity.MEDIUM, Enforcement.ADVISORY,
           "Set aks.registerInfinibandFeature: true (the stack registers it and waits for Registered), or register "
           "it once per subscription: az feature register --namespace Microsoft.ContainerService --name "
           "AKSInfinibandSupport.",
           _infiniband_feature_unregistered),
    Policy("driver-changes-reach-nodes",
           "A driver change reaches the nodes, through the operator controller in production.",
           Severity.MEDIUM, Enforcement.ADVISORY,
           "Set agents.image (or agents.build): the operator controller upgrades driver nodes one by one within "
           "upgradePolicy. Without it, upgradePolicy.autoUpgrade: true lets the DaemonSet roll a new driver itself.",
           _driver_changes_reach_nodes),
    Policy("bounded-parallel-driver-upgrades", "A production stack upgrades drivers a few nodes at a time.",
           Severity.MEDIUM, Enforcement.ADVISORY,
           "Set operator.driver.upgradePolicy.maxParallelUpgrades (and maxUnavailable) to a small number.",
           _unlimited_upgrades),
)
