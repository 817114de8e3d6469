"""Checks of what the GPU nodes report about themselves: detection labels, advertised GPUs, MIG and driver-upgrade
state, MOFED readiness and RDMA resources.

* Detection: NFD labels a node with an NVIDIA PCI device (`feature.node.kubernetes.io/pci-10de.present` and the
  display-class variants); the operator (or, in our stacks, the AKS pool's node labels) then sets
  `nvidia.com/gpu.present=true`, without which no operand is scheduled there.
* Advertised GPUs: allocatable `nvidia.com/gpu` (plus `nvidia.com/mig-*`) against `nvidia.com/gpu.count` times
  `nvidia.com/gpu.replicas`, as GPU feature discovery labels them. Zero where the device plugin should run breaks
  the layer; fewer than expected degrades it.
* MIG: `nvidia.com/mig.config.state` `failed`, or `pending`/`rebooting` held past the threshold; a requested layout
  the mig-parted ConfigMap does not define (the MIG manager waits forever); operands still paused after success.
* Driver upgrades: `nvidia.com/gpu-driver-upgrade-state` `upgrade-failed`, or an intermediate state held past the
  threshold; operands still paused for an upgrade that is over.
* Network: `network.nvidia.com/operator.mofed.wait=true` on an InfiniBand node (MOFED not loaded), and each RDMA
  resource the NicClusterPolicy's device plugins define advertised as zero on a node whose MOFED is ready.

How long a label has held comes from the node's managedFields (see :mod:`gpu_operator.diag.snapshot`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import yaml

from gpu_operator.diag.findings import Finding, Layer, Severity
from gpu_operator.diag.operands import DEPLOY_LABEL_PREFIX, GPU_PRESENT_LABEL, duration, gpu_nodes, operand_daemonsets
from gpu_operator.diag.snapshot import Obj, Snapshot, count, label_changed_at, labels, name
from gpu_operator.readiness.mofed import IB_NODE_LABEL, MOFED_WAIT_LABEL

__all__ = [
    "Thresholds",
    "NFD_GPU_LABELS",
    "GPU_COUNT_LABEL",
    "GPU_REPLICAS_LABEL",
    "MIG_CONFIG_LABEL",
    "MIG_STATE_LABEL",
    "UPGRADE_STATE_LABEL",
    "detection_findings",
    "allocatable_findings",
    "mig_findings",
    "upgrade_findings",
    "network_findings",
    "rdma_resources",
    "mounted_config_map",
    "GPU_RESOURCE",
    "MIG_RESOURCE_PREFIX",
]

NFD_GPU_LABELS = tuple(f"feature.node.kubernetes.io/{pci}.present" for pci in ("pci-10de", "pci-0302_10de",
                                                                               "pci-0300_10de"))
GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_REPLICAS_LABEL = "nvidia.com/gpu.replicas"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_STATE_LABEL = "nvidia.com/mig.config.state"
UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
_MIG_PAUSED = "paused-for-mig-change"
_UPGRADE_PAUSED = "paused-for-driver-upgrade"
_MIG_IN_PROGRESS = {"pending", "rebooting"}
_UPGRADE_SETTLED = {"", "upgrade-done"}
_DEFAULT_MIG_CONFIG_MAP = ("default-mig-parted-config", "config.yaml")


@dataclass(frozen=True)
class Thresholds:
    """How long a transitional state may hold before it counts as stuck."""

    init: timedelta = timedelta(minutes=10)
    mig: timedelta = timedelta(minutes=10)
    upgrade: timedelta = timedelta(minutes=30)

    @classmethod
    def all(cls, seconds: float) -> Thresholds:
        delta = timedelta(seconds=seconds)
        return cls(delta, delta, delta)


def _plugin_logs(snapshot: Snapshot, app: str, node: str) -> str:
    ns = snapshot.namespace
    return (f"kubectl logs -n {ns} $(kubectl get pod -n {ns} -l app={app} "
            f"--field-selector spec.nodeName={node} -o name)")


def detection_findings(snapshot: Snapshot) -> list[Finding]:
    findings = []
    for node in snapshot.nodes:
        node_labels, node_name = labels(node), name(node)
        if node_labels.get(GPU_PRESENT_LABEL) == "true":
            continue
        nfd = [label for label in NFD_GPU_LABELS if node_labels.get(label) == "true"]
        capacity = count(((node.get("status") or {}).get("capacity") or {}).get(GPU_RESOURCE)) or 0
        if nfd:
            findings.append(Finding(
                "gpu-not-labelled", Layer.OPERATOR, Severity.ERROR, f"node/{node_name}",
                f"NFD found an NVIDIA GPU ({nfd[0]}=true) but the node is not labelled {GPU_PRESENT_LABEL}=true, "
                "so no operand is scheduled on it",
                f"kubectl get node {node_name} -L {GPU_PRESENT_LABEL}; kubectl logs -n {snapshot.namespace} "
                "deploy/gpu-operator (or add the label to the pool's node labels)"))
        elif capacity or node_labels.get(GPU_COUNT_LABEL):
            findings.append(Finding(
                "gpu-not-detected", Layer.FEATURE_DISCOVERY, Severity.WARNING, f"node/{node_name}",
                f"the node has GPUs ({GPU_RESOURCE} capacity {capacity}) but neither an NFD NVIDIA PCI label nor "
                f"{GPU_PRESENT_LABEL}=true: it is not part of the GPU stack",
                f"kubectl get node {node_name} --show-labels; check that NFD's worker runs on it"))
    return findings


def _advertised(node: Obj) -> tuple[int, int]:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    gpus = count(allocatable.get(GPU_RESOURCE)) or 0
    mig = sum(count(value) or 0 for key, value in allocatable.items() if key.startswith(MIG_RESOURCE_PREFIX))
    return gpus, mig


def allocatable_findings(snapshot: Snapshot) -> list[Finding]:
    plugin_label = DEPLOY_LABEL_PREFIX + "device-plugin"
    findings = []
    for node in gpu_nodes(snapshot):
        node_labels, node_name = labels(node), name(node)
        if node_labels.get(plugin_label, "true") != "true":
            continue  # paused for a MIG change or an upgrade, or not deployed here: nothing advertised on purpose
        gpus, mig = _advertised(node)
        present = count(node_labels.get(GPU_COUNT_LABEL))
        mig_on = node_labels.get(MIG_CONFIG_LABEL, "all-disabled") != "all-disabled"
        logs = _plugin_logs(snapshot, "nvidia-device-plugin-daemonset", node_name)
        if gpus + mig == 0:
            of = f" of the {present} present ({GPU_COUNT_LABEL})" if present else ""
            findings.append(Finding(
                "no-gpus-advertised", Layer.DEVICE_PLUGIN, Severity.ERROR, f"node/{node_name}",
                f"the device plugin advertises 0 GPUs{of}: allocatable {GPU_RESOURCE} is "
                f"{((node.get('status') or {}).get('allocatable') or {}).get(GPU_RESOURCE, 'absent')}", logs))
        elif present and not mig_on:
            replicas = count(node_labels.get(GPU_REPLICAS_LABEL)) or 1
            expected = present * replicas
            if gpus != expected:
                shared = f" x {replicas} replicas" if replicas > 1 else ""
                findings.append(Finding(
                    "gpus-advertised-mismatch", Layer.DEVICE_PLUGIN, Severity.WARNING, f"node/{node_name}",
                    f"allocatable {GPU_RESOURCE} is {gpus}, but {present} GPUs are present{shared} "
                    f"(expected {expected})", logs))
    return findings


def mounted_config_map(ds: Obj, mount_path: str) -> str | None:
    """The ConfigMap a DaemonSet's pods mount at `mount_path`, if any."""
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for mount in container.get("volumeMounts") or []:
            if mount.get("mountPath", "").rstrip("/") == mount_path.rstrip("/"):
                config_map = (volumes.get(mount.get("name")) or {}).get("configMap") or {}
                if config_map.get("name"):
                    return str(config_map["name"])
    return None


def _container_env(ds: Obj, variable: str) -> str | None:
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in spec.get("containers") or []:
        for env in container.get("env") or []:
            if env.get("name") == variable and "value" in env:
                return str(env["value"])
    return None


def _mig_layouts(snapshot: Snapshot) -> tuple[str, set[str]] | None:
    """The mig-parted ConfigMap the MIG manager reads and the layouts it defines; None when it cannot be read."""
    map_name, key = _DEFAULT_MIG_CONFIG_MAP
    for operand, sets in operand_daemonsets(snapshot).items():
        if operand.app == "nvidia-mig-manager":
            config_file = _container_env(sets[0], "CONFIG_FILE")
            if config_file and "/" in config_file:
                directory, key = config_file.rsplit("/", 1)
                map_name = mounted_config_map(sets[0], directory) or map_name
    config_map = snapshot.config_map(map_name)
    if config_map is None or key not in (config_map.get("data") or {}):
        return None
    try:
        document = yaml.safe_load(config_map["data"][key]) or {}
    except yaml.YAMLError:
        return None
    layouts = document.get("mig-configs") if isinstance(document, dict) else None
    return (map_name, set(layouts)) if isinstance(layouts, dict) else None


def _held(snapshot: Snapshot, node: Obj, label: str) -> timedelta | None:
    changed = label_changed_at(node, label)
    return snapshot.now - changed if changed is not None else None


def _paused(node_labels: Mapping[str, str], value: str) -> list[str]:
    return sorted(k[len(DEPLOY_LABEL_PREFIX):] for k, v in node_labels.items()
                  if k.startswith(DEPLOY_LABEL_PREFIX) and v == value)


def _stuck(check: str, layer: Layer, node_name: str, what: str, held: timedelta | None, limit: timedelta,
           next_command: str) -> Finding:
    if held is None:
        return Finding(check, layer, Severity.WARNING, f"node/{node_name}",
                       f"{what}; since when is not recorded (no managedFields entry owns the label)", next_command)
    if held > limit:
        return Finding(check, layer, Severity.ERROR, f"node/{node_name}",
                       f"{what} for at least {duration(held)} (stuck: over {duration(limit)})", next_command)
    return Finding(check, layer, Severity.INFO, f"node/{node_name}",
                   f"{what} for {duration(held)} (in progress, under {duration(limit)})", next_command)


def mig_findings(snapshot: Snapshot, thresholds: Thresholds) -> list[Finding]:
    findings = []
    layouts = _mig_layouts(snapshot)
    for node in gpu_nodes(snapshot):
        node_labels, node_name = labels(node), name(node)
        requested, state = node_labels.get(MIG_CONFIG_LABEL), node_labels.get(MIG_STATE_LABEL, "")
        logs = _plugin_logs(snapshot, "nvidia-mig-manager", node_name)
        if requested and layouts is not None and requested not in layouts[1]:
            findings.append(Finding(
                "mig-layout-unknown", Layer.DEVICE_PLUGIN, Severity.ERROR, f"node/{node_name}",
                f"{MIG_CONFIG_LABEL}={requested} names a layout ConfigMap {layouts[0]} does not define "
                f"(it has: {', '.join(sorted(layouts[1]))}); the MIG manager cannot apply it",
                f"kubectl label node {node_name} {MIG_CONFIG_LABEL}=<one of those> --overwrite"))
        if state == "failed":
            findings.append(Finding(
                "mig-failed", Layer.DEVICE_PLUGIN, Severity.ERROR, f"node/{node_name}",
                f"the MIG manager failed to apply layout {requested or '(none requested)'} "
                f"({MIG_STATE_LABEL}=failed)", logs))
        elif state in _MIG_IN_PROGRESS:
            findings.append(_stuck("mig-pending", Layer.DEVICE_PLUGIN, node_name,
                                   f"MIG layout {requested} is {state} ({MIG_STATE_LABEL}={state})",
                                   _held(snapshot, node, MIG_STATE_LABEL), thresholds.mig, logs))
        elif state == "success" and (paused := _paused(node_labels, _MIG_PAUSED)):
            findings.append(Finding(
                "mig-paused-after-success", Layer.DEVICE_PLUGIN, Severity.WARNING, f"node/{node_name}",
                f"MIG reconfiguration succeeded but operands are still {_MIG_PAUSED}: {', '.join(paused)}", logs))
    return findings


def upgrade_findings(snapshot: Snapshot, thresholds: Thresholds) -> list[Finding]:
    findings = []
    for node in gpu_nodes(snapshot):
        node_labels, node_name = labels(node), name(node)
        state = node_labels.get(UPGRADE_STATE_LABEL, "")
        describe = (f"kubectl describe node {node_name}; kubectl get pods -n {snapshot.namespace} "
                    f"-l app=nvidia-driver-daemonset --field-selector spec.nodeName={node_name}")
        if state == "upgrade-failed":
            findings.append(Finding(
                "upgrade-failed", Layer.DRIVER, Severity.ERROR, f"node/{node_name}",
                f"the driver upgrade failed on this node ({UPGRADE_STATE_LABEL}=upgrade-failed)", describe))
        elif state not in _UPGRADE_SETTLED:
            findings.append(_stuck("upgrade-stuck", Layer.DRIVER, node_name,
                                   f"the driver upgrade is at {state}", _held(snapshot, node, UPGRADE_STATE_LABEL),
                                   thresholds.upgrade, describe))
        elif paused := _paused(node_labels, _UPGRADE_PAUSED):
            findings.append(Finding(
                "upgrade-paused-after-done", Layer.DRIVER, Severity.WARNING, f"node/{node_name}",
                f"no driver upgrade is running but operands are still {_UPGRADE_PAUSED}: {', '.join(paused)}",
                describe))
    return findings


def _plugin_config(section: Any) -> Any:
    config = section.get("config") if isinstance(section, dict) else None
    if isinstance(config, str):
        try:
            return json.loads(config)
        except ValueError:
            return None
    return config


def rdma_resources(nic_cluster_policy: Obj | None) -> set[str]:
    """The RDMA resources the NicClusterPolicy's device plugins advertise (`rdma/shared_ib`, `rdma/ib`)."""
    spec = (nic_cluster_policy or {}).get("spec") or {}
    resources: set[str] = set()
    shared = _plugin_config(spec.get("rdmaSharedDevicePlugin"))
    for entry in (shared.get("configList") or []) if isinstance(shared, dict) else []:
        if isinstance(entry, dict) and entry.get("resourceName"):
            resources.add(f"{entry.get('resourcePrefix', 'rdma')}/{entry['resourceName']}")
    sriov = _plugin_config(spec.get("sriovDevicePlugin"))
    for entry in (sriov.get("resourceList") or []) if isinstance(sriov, dict) else []:
        if isinstance(entry, dict) and entry.get("resourceName"):
            resources.add(f"{entry.get('resourcePrefix', 'intel.com')}/{entry['resourceName']}")
    return resources


def _ib_nodes(snapshot: Snapshot) -> Iterator[Obj]:
    return (node for node in snapshot.nodes if labels(node).get(IB_NODE_LABEL) == "true")


def network_findings(snapshot: Snapshot) -> list[Finding]:
    findings = []
    policy = snapshot.nic_cluster_policy
    expected = rdma_resources(policy)
    if policy is not None:
        state = (policy.get("status") or {}).get("state")
        if state and state != "ready":
            findings.append(Finding(
                "nicclusterpolicy-not-ready", Layer.NETWORK, Severity.WARNING, f"nicclusterpolicy/{name(policy)}",
                f"the NicClusterPolicy reports state {state}",
                f"kubectl get nicclusterpolicy {name(policy)} -o jsonpath='{{.status}}'"))
    for node in _ib_nodes(snapshot):
        node_labels, node_name = labels(node), name(node)
        wait = node_labels.get(MOFED_WAIT_LABEL)
        if wait == "true":
            held = _held(snapshot, node, MOFED_WAIT_LABEL)
            since = f" for at least {duration(held)}" if held is not None else ""
            findings.append(Finding(
                "mofed-not-ready", Layer.NETWORK, Severity.ERROR, f"node/{node_name}",
                f"MOFED is not ready on this InfiniBand node ({MOFED_WAIT_LABEL}=true{since}): no RDMA device "
                "plugin runs here and GPUDirect RDMA is unavailable",
                "kubectl get pods -A -l nvidia.com/ofed-driver -o wide --field-selector "
                f"spec.nodeName={node_name}; then kubectl logs on the MOFED pod"))
            continue
        if wait is None and policy is not None and (policy.get("spec") or {}).get("ofedDriver"):
            findings.append(Finding(
                "mofed-unlabelled", Layer.NETWORK, Severity.WARNING, f"node/{node_name}",
                f"the NicClusterPolicy deploys MOFED but this InfiniBand node has no {MOFED_WAIT_LABEL} label yet",
                "kubectl get pods -n network-operator -o wide"))
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        resources = expected or {key for key in allocatable if key.startswith("rdma/")}
        for resource in sorted(resources):
            if not count(allocatable.get(resource)):
                findings.append(Finding(
                    "rdma-not-advertised", Layer.NETWORK, Severity.ERROR, f"node/{node_name}",
                    f"{resource} is advertised as {allocatable.get(resource, 'absent')} on this InfiniBand node "
                    "whose MOFED is ready: RDMA workloads cannot be scheduled here",
                    "kubectl get pods -n network-operator -o wide; kubectl logs on the RDMA device plugin pod of "
                    f"{node_name} (its config selects no device?)"))
    return findings
