"""Checks from the workloads' side: pods that request GPUs (or RDMA devices) and cannot run, and the device
plugin's sharing config.

A pending GPU pod says why in its `PodScheduled` condition and its `FailedScheduling` events. "Insufficient
nvidia.com/gpu" with GPU nodes present points at the device plugin (it advertises fewer GPUs than asked for);
"Insufficient rdma/..." at the network layer; any other reason (taints, affinity, CPU) is the workload's own and
is reported as info. A pod the kubelet rejected at admission (`UnexpectedAdmissionError`: the plugin's Allocate
failed) degrades the device plugin.

The sharing config is the ConfigMap the config-manager mounts at `/available-configs`: every node's
`nvidia.com/device-plugin.config` must name one of its keys, each config must parse, and shared GPUs
(time-slicing or MPS with more than one replica) should set `failRequestsGreaterThanOne`, without which a pod asking
for two replicas gets two slices of one GPU and believes it has two GPUs.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpu_operator.diag.findings import Finding, Layer, Severity
from gpu_operator.diag.nodes import GPU_RESOURCE, MIG_RESOURCE_PREFIX, mounted_config_map
from gpu_operator.diag.operands import operand_daemonsets
from gpu_operator.diag.snapshot import Obj, Snapshot, labels, name, namespace, subject

__all__ = ["requests_gpus", "pending_pod_findings", "sharing_findings", "PLUGIN_CONFIG_LABEL"]

PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
_CONFIGS_DIR = "/available-configs"
#: What an Insufficient-resource message names → the layer that advertises it.
_RESOURCE_LAYERS: tuple[tuple[str, Layer], ...] = (
    (GPU_RESOURCE, Layer.DEVICE_PLUGIN),
    (MIG_RESOURCE_PREFIX, Layer.DEVICE_PLUGIN),
    ("rdma/", Layer.NETWORK),
)


def _requested(pod: Obj) -> dict[str, str]:
    resources: dict[str, str] = {}
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for section in ("limits", "requests"):
            for key, value in ((container.get("resources") or {}).get(section) or {}).items():
                if any(key.startswith(prefix) for prefix, _ in _RESOURCE_LAYERS):
                    resources[key] = str(value)
    return resources


def requests_gpus(pod: Obj) -> bool:
    """Whether a pod requests a GPU, a MIG device or an RDMA device (what the I/O layer keeps cluster-wide)."""
    return bool(_requested(pod))


def _why_pending(snapshot: Snapshot, pod: Obj) -> str:
    condition = next((c for c in (pod.get("status") or {}).get("conditions") or []
                      if c.get("type") == "PodScheduled" and c.get("status") == "False"), None)
    messages = [str(condition.get("message", "")).strip()] if condition else []
    for event in snapshot.events_for("Pod", namespace(pod), name(pod)):
        if event.get("reason") == "FailedScheduling":
            messages.append(str(event.get("message", "")).strip())
    return next((m for m in reversed(messages) if m), "")


def pending_pod_findings(snapshot: Snapshot) -> list[Finding]:
    findings = []
    for pod in snapshot.gpu_pods:
        status = pod.get("status") or {}
        asked = ", ".join(f"{k}: {v}" for k, v in sorted(_requested(pod).items()))
        describe = f"kubectl describe pod -n {namespace(pod)} {name(pod)}"
        if status.get("phase") == "Failed" and status.get("reason") == "UnexpectedAdmissionError":
            findings.append(Finding(
                "gpu-pod-rejected", Layer.DEVICE_PLUGIN, Severity.WARNING, subject("pod", pod),
                f"the kubelet rejected this pod ({asked}): {status.get('message', '')}", describe))
            continue
        if status.get("phase") != "Pending" or (pod.get("spec") or {}).get("nodeName"):
            continue
        why = _why_pending(snapshot, pod)
        layer, severity = Layer.DEVICE_PLUGIN, Severity.INFO
        for prefix, resource_layer in _RESOURCE_LAYERS:
            if f"Insufficient {prefix}" in why:
                layer, severity = resource_layer, Severity.WARNING
                break
        findings.append(Finding(
            "gpu-pod-pending", layer, severity, subject("pod", pod),
            f"pending, requesting {asked}: {why or 'not scheduled yet (no reason reported)'}", describe))
    return findings


def _sharing(config: Any) -> tuple[int, bool] | None:
    """(largest replicas, failRequestsGreaterThanOne) of a config's time-slicing or MPS section; None: not shared."""
    sharing = (config or {}).get("sharing") if isinstance(config, dict) else None
    found: tuple[int, bool] | None = None
    for section in ("timeSlicing", "mps"):
        part = (sharing or {}).get(section) if isinstance(sharing, dict) else None
        if not isinstance(part, dict):
            continue
        replicas = max((int(r.get("replicas", 1)) for r in part.get("resources") or []
                        if isinstance(r, dict) and str(r.get("replicas", 1)).isdigit()), default=1)
        if replicas > 1:
            found = (replicas, bool(part.get("failRequestsGreaterThanOne")))
    return found


def sharing_findings(snapshot: Snapshot) -> list[Finding]:
    plugin = next((sets[0] for operand, sets in operand_daemonsets(snapshot).items()
                   if operand.app == "nvidia-device-plugin-daemonset"), None)
    map_name = mounted_config_map(plugin, _CONFIGS_DIR) if plugin is not None else None
    if map_name is None:
        return []
    config_map = snapshot.config_map(map_name)
    ns = snapshot.namespace
    if config_map is None:
        return [Finding("plugin-config-missing", Layer.DEVICE_PLUGIN, Severity.ERROR, f"configmap/{ns}/{map_name}",
                        f"the device plugin mounts ConfigMap {map_name}, which does not exist: its pods cannot start",
                        f"kubectl get configmap -n {ns}")]
    findings = []
    data = config_map.get("data") or {}
    for key, text in sorted(data.items()):
        try:
            config = yaml.safe_load(text)
        except yaml.YAMLError as error:
            findings.append(Finding(
                "plugin-config-invalid", Layer.DEVICE_PLUGIN, Severity.ERROR, f"configmap/{ns}/{map_name}",
                f"config {key} is not valid YAML ({str(error).splitlines()[0]})",
                f"kubectl get configmap -n {ns} {map_name} -o yaml"))
            continue
        shared = _sharing(config)
        if shared is not None and not shared[1]:
            findings.append(Finding(
                "sharing-without-fail-requests", Layer.DEVICE_PLUGIN, Severity.WARNING, f"configmap/{ns}/{map_name}",
                f"config {key} shares each GPU {shared[0]} ways without failRequestsGreaterThanOne: a pod asking "
                "for 2 GPUs may get 2 slices of one", f"kubectl edit configmap -n {ns} {map_name}"))
    for node in snapshot.nodes:
        wanted = labels(node).get(PLUGIN_CONFIG_LABEL)
        if wanted and wanted not in data:
            findings.append(Finding(
                "plugin-config-unknown", Layer.DEVICE_PLUGIN, Severity.ERROR, f"node/{name(node)}",
                f"{PLUGIN_CONFIG_LABEL}={wanted} names no config of ConfigMap {map_name} "
                f"(it has: {', '.join(sorted(data)) or 'none'})",
                f"kubectl label node {name(node)} {PLUGIN_CONFIG_LABEL}=<one of those> --overwrite"))
    return findings
