"""The operands `diag` knows, and the checks of their pods and DaemonSets.

Each operand runs as pods labelled `app=<its DaemonSet's name>` (precompiled driver DaemonSets append the kernel
and OS), scheduled on the nodes labelled `nvidia.com/gpu.deploy.<operand>=true`. A pod waiting in one of the
validator's init containers (`driver-validation`, `toolkit-validation`, ...) is held up by the layer that init
container waits for, not by its own: a device plugin stuck in `toolkit-validation` is a toolkit problem.

Checks: a pod that cannot pull its image, restarts in CrashLoopBackOff, cannot create its container, is not
scheduled, stays in an init container past the threshold, failed, or runs not ready; each operand DaemonSet's ready
count against its desired count; and every node labelled for an operand actually running one of its pods (an
operand whose DaemonSet is missing altogether, such as a deleted exporter, shows up here). The operator's own
controller pod is checked like an operand. A pod being deleted (a rollout, a drain) is not judged: its
replacement is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from gpu_operator.diag.findings import Finding, Layer, Severity
from gpu_operator.diag.snapshot import Obj, Snapshot, labels, name, parse_time, subject

__all__ = [
    "Operand",
    "OPERANDS",
    "CONTROLLER",
    "DEPLOY_LABEL_PREFIX",
    "GPU_PRESENT_LABEL",
    "operand_of",
    "operand_daemonsets",
    "gpu_nodes",
    "pod_findings",
    "daemonset_findings",
    "placement_findings",
    "deployed_layers",
    "validations",
    "VALIDATIONS",
    "duration",
    "operand_pod_findings",
]

DEPLOY_LABEL_PREFIX = "nvidia.com/gpu.deploy."
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"


@dataclass(frozen=True)
class Operand:
    """An operand: its pods' `app` label (= its DaemonSet's name), layer, the deploy label that places it, the
    ClusterPolicy section that enables it (`None`: not switchable there) and whether it is on when that section
    leaves `enabled` unset (the CRD's default, not the Helm chart's)."""

    app: str
    layer: Layer
    deploy: str | None
    policy_section: str | None = None
    policy_default: bool = True

    @property
    def deploy_label(self) -> str | None:
        return DEPLOY_LABEL_PREFIX + self.deploy if self.deploy else None

    def matches(self, app: str) -> bool:
        return app == self.app or app.startswith(self.app + "-")


#: Most specific first: `nvidia-dcgm-exporter` must be matched before `nvidia-dcgm`.
OPERANDS: tuple[Operand, ...] = (
    Operand("nvidia-driver-daemonset", Layer.DRIVER, "driver", "driver"),
    Operand("nvidia-container-toolkit-daemonset", Layer.TOOLKIT, "container-toolkit", "toolkit"),
    Operand("nvidia-operator-validator", Layer.OPERATOR, "operator-validator", "validator"),
    Operand("nvidia-device-plugin-daemonset", Layer.DEVICE_PLUGIN, "device-plugin", "devicePlugin"),
    Operand("nvidia-device-plugin-mps-control-daemon", Layer.DEVICE_PLUGIN, None),
    Operand("nvidia-mig-manager", Layer.DEVICE_PLUGIN, "mig-manager", "migManager"),
    Operand("gpu-feature-discovery", Layer.FEATURE_DISCOVERY, "gpu-feature-discovery", "gfd"),
    Operand("nvidia-dcgm-exporter", Layer.EXPORTER, "dcgm-exporter", "dcgmExporter"),
    Operand("nvidia-dcgm", Layer.EXPORTER, "dcgm", "dcgm"),
    Operand("nvidia-node-status-exporter", Layer.EXPORTER, "node-status-exporter", "nodeStatusExporter", False),
)
#: The operator's controller (a Deployment), checked like an operand.
CONTROLLER = Operand("gpu-operator", Layer.OPERATOR, None)
_NFD = Operand("node-feature-discovery", Layer.FEATURE_DISCOVERY, None)
#: Driver pods and DaemonSets of NVIDIADriver resources carry this component label instead of the usual name.
_NVIDIA_DRIVER_COMPONENT = "nvidia-driver"

#: Init containers that wait for another layer, and that layer.
_WAITS_FOR: Mapping[str, Layer] = {
    "k8s-driver-manager": Layer.DRIVER,
    "driver-validation": Layer.DRIVER,
    "toolkit-validation": Layer.TOOLKIT,
    "cuda-validation": Layer.TOOLKIT,
    "plugin-validation": Layer.DEVICE_PLUGIN,
    "mofed-validation": Layer.NETWORK,
}
#: The validator's init containers, in order, and the `/run/nvidia/validations` file each writes.
VALIDATIONS: tuple[tuple[str, str], ...] = (
    ("driver-validation", "driver-ready"),
    ("toolkit-validation", "toolkit-ready"),
    ("cuda-validation", "cuda-ready"),
    ("plugin-validation", "plugin-ready"),
)
_IMAGE_PULL = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
_CANNOT_START = {"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreCreateHookError",
                 "PostStartHookError"}


def operand_of(pod: Obj) -> Operand | None:
    """The operand a pod belongs to, by its labels."""
    pod_labels = labels(pod)
    app, component = pod_labels.get("app", ""), pod_labels.get("app.kubernetes.io/component")
    if component == "gpu-operator" or app == CONTROLLER.app:
        return CONTROLLER
    if pod_labels.get("app.kubernetes.io/name") == _NFD.app:
        return _NFD
    if component == _NVIDIA_DRIVER_COMPONENT:
        return OPERANDS[0]
    return next((operand for operand in OPERANDS if app and operand.matches(app)), None)


def operand_daemonsets(snapshot: Snapshot) -> dict[Operand, list[Obj]]:
    found: dict[Operand, list[Obj]] = {}
    for ds in snapshot.daemonsets:
        template = ((ds.get("spec") or {}).get("template") or {}).get("metadata") or {}
        if (template.get("labels") or {}).get("app.kubernetes.io/component") == _NVIDIA_DRIVER_COMPONENT:
            operand: Operand | None = OPERANDS[0]
        else:
            operand = next((o for o in OPERANDS if o.matches(name(ds))), None)
        if operand is not None:
            found.setdefault(operand, []).append(ds)
    return found


def gpu_nodes(snapshot: Snapshot) -> list[Obj]:
    return [node for node in snapshot.nodes if labels(node).get(GPU_PRESENT_LABEL) == "true"]


def _container_states(pod: Obj) -> Iterable[tuple[bool, Obj]]:
    status = pod.get("status") or {}
    for state in status.get("initContainerStatuses") or []:
        yield True, state
    for state in status.get("containerStatuses") or []:
        yield False, state


def _condition(obj: Obj, kind: str) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _last_warning(snapshot: Snapshot, pod: Obj) -> str:
    events = [e for e in snapshot.events_for("Pod", str(pod["metadata"].get("namespace", "")), name(pod))
              if e.get("type") == "Warning"]
    if not events:
        return ""
    latest = max(events, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return f"; last event: {latest.get('reason', '')}: {str(latest.get('message', '')).strip()}"


def pod_findings(snapshot: Snapshot, pod: Obj, operand: Operand, init_stuck_after: timedelta) -> list[Finding]:
    """At most one finding for one operand pod: the first problem in the order a pod meets them."""
    ns, pod_name = str(pod["metadata"].get("namespace", "")), name(pod)
    node = (pod.get("spec") or {}).get("nodeName") or "no node"
    where = f"{pod_name} on {node}"
    describe = f"kubectl describe pod -n {ns} {pod_name}"
    about = subject("pod", pod)
    events = _last_warning(snapshot, pod)

    def finding(check: str, layer: Layer, what: str, next_command: str = describe,
                severity: Severity = Severity.ERROR) -> list[Finding]:
        return [Finding(check, layer, severity, about, what + events, next_command)]

    for is_init, state in _container_states(pod):
        container = str(state.get("name", ""))
        layer = _WAITS_FOR.get(container, operand.layer) if is_init else operand.layer
        waiting = (state.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason", "")
        if reason in _IMAGE_PULL:
            return finding("image-pull", layer, f"{where}: container {container} cannot pull its image "
                           f"{state.get('image', '')} ({reason}: {waiting.get('message', '').strip()})")
        if reason == "CrashLoopBackOff":
            last = (state.get("lastState") or {}).get("terminated") or {}
            exit_text = f"; last exit code {last['exitCode']} ({last.get('reason', '')})" if "exitCode" in last else ""
            return finding("crash-loop", layer, f"{where}: container {container} is in CrashLoopBackOff after "
                           f"{state.get('restartCount', 0)} restarts{exit_text}",
                           f"kubectl logs -n {ns} {pod_name} -c {container} --previous")
        if reason in _CANNOT_START:
            return finding("container-not-created", layer, f"{where}: container {container} cannot start "
                           f"({reason}: {waiting.get('message', '').strip()})")

    status = pod.get("status") or {}
    phase = status.get("phase", "")
    if phase == "Failed":
        return finding("pod-failed", operand.layer, f"{where} failed ({status.get('reason', '')}: "
                       f"{status.get('message', '')})".replace(" (: )", ""))
    scheduled = _condition(pod, "PodScheduled")
    if phase == "Pending" and scheduled is not None and scheduled.get("status") == "False":
        return finding("pod-unschedulable", operand.layer, f"{pod_name} is not scheduled: "
                       f"{scheduled.get('message', scheduled.get('reason', ''))}")
    for is_init, state in _container_states(pod):
        if not is_init:
            continue
        terminated = (state.get("state") or {}).get("terminated") or {}
        if terminated.get("exitCode") == 0:
            continue
        container = str(state.get("name", ""))
        layer = _WAITS_FOR.get(container, operand.layer)
        started = parse_time(status.get("startTime")) or parse_time(pod["metadata"].get("creationTimestamp"))
        held = snapshot.now - started if started else None
        too_long = held is not None and held > init_stuck_after
        waited = f" for {duration(held)}" if held is not None else ""
        return finding("init-stuck", layer, f"{where} is still in init container {container}{waited}"
                       + ("" if too_long else " (within the threshold: still starting)"),
                       f"kubectl logs -n {ns} {pod_name} -c {container}",
                       Severity.ERROR if too_long else Severity.INFO)
    ready = _condition(pod, "Ready")
    if phase == "Running" and ready is not None and ready.get("status") != "True":
        not_ready = [str(s.get("name")) for i, s in _container_states(pod) if not i and not s.get("ready")]
        return finding("pod-not-ready", operand.layer, f"{where} is running but not ready (containers not ready: "
                       f"{', '.join(not_ready) or 'none reported'})",
                       f"kubectl describe pod -n {ns} {pod_name}; kubectl logs -n {ns} {pod_name}")
    return []


def daemonset_findings(snapshot: Snapshot) -> list[Finding]:
    """Each operand DaemonSet's ready pods against its desired count."""
    findings = []
    for operand, sets in operand_daemonsets(snapshot).items():
        for ds in sets:
            status = ds.get("status") or {}
            desired, ready = int(status.get("desiredNumberScheduled") or 0), int(status.get("numberReady") or 0)
            if desired > ready:
                findings.append(Finding(
                    "daemonset-not-ready", operand.layer, Severity.ERROR, subject("daemonset", ds),
                    f"{ready} of {desired} pods ready",
                    f"kubectl get pods -n {snapshot.namespace} -l app={labels(ds).get('app', name(ds))} -o wide"))
    return findings


def _policy_enabled(snapshot: Snapshot, operand: Operand) -> bool | None:
    """Whether the ClusterPolicy turns the operand on; None without a ClusterPolicy (or a section to read)."""
    if snapshot.cluster_policy is None or operand.policy_section is None:
        return None
    section = (snapshot.cluster_policy.get("spec") or {}).get(operand.policy_section) or {}
    enabled = section.get("enabled")
    return operand.policy_default if enabled is None else enabled is True


def placement_findings(snapshot: Snapshot) -> list[Finding]:
    """Every GPU node labelled for an operand runs one of its pods; an operand the ClusterPolicy enables has a
    DaemonSet once GPU nodes exist. With a ClusterPolicy, an operand it turns off is expected nowhere: the
    operator labels every node for every operand of its workload type, enabled or not. Without one (our stacks set
    the deploy labels from the pool's config), the labels are the expectation."""
    nodes = gpu_nodes(snapshot)
    daemonsets = operand_daemonsets(snapshot)
    on_node: dict[tuple[Operand, str], Obj] = {}
    for pod in snapshot.pods:
        operand = operand_of(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if operand is not None and node:
            on_node[(operand, node)] = pod
    findings = []
    for operand in OPERANDS:
        enabled = _policy_enabled(snapshot, operand)
        if enabled is False:
            continue
        labelled = [name(n) for n in nodes if operand.deploy_label and labels(n).get(operand.deploy_label) == "true"]
        if operand not in daemonsets:
            if labelled or (nodes and enabled):
                why = (f"{len(labelled)} GPU node(s) are labelled {operand.deploy_label}=true ({', '.join(labelled)})"
                       if labelled else "the ClusterPolicy enables it and there are GPU nodes")
                findings.append(Finding(
                    "operand-missing", operand.layer, Severity.ERROR, f"daemonset/{snapshot.namespace}/{operand.app}",
                    f"no {operand.app} DaemonSet in namespace {snapshot.namespace}, but {why}",
                    f"kubectl get daemonsets -n {snapshot.namespace}; check that the stack deploys {operand.app}"))
            continue
        for node_name in labelled:
            if (operand, node_name) not in on_node:
                findings.append(Finding(
                    "operand-not-on-node", operand.layer, Severity.ERROR, f"node/{node_name}",
                    f"no {operand.app} pod on this node, though it is labelled {operand.deploy_label}=true",
                    f"kubectl describe daemonset -n {snapshot.namespace} {name(daemonsets[operand][0])}; "
                    f"kubectl describe node {node_name}"))
    return findings


def deployed_layers(snapshot: Snapshot) -> set[Layer]:
    layers = {operand.layer for operand in operand_daemonsets(snapshot)}
    if gpu_nodes(snapshot) or any(operand_of(p) is CONTROLLER for p in snapshot.pods):
        layers.add(Layer.OPERATOR)
    return layers


def validations(snapshot: Snapshot) -> dict[str, dict[str, str]]:
    """Per node, the state of each `/run/nvidia/validations` file as the validator pod's init containers show it:
    `ready` (the init container that writes it exited 0), `failed`, or `pending`. Read from pod status, not by
    exec into the pod: diag needs no `pods/exec` right, which read-only roles rarely hold."""
    table: dict[str, dict[str, str]] = {}
    for pod in snapshot.pods:
        operand = operand_of(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if operand is None or operand.app != "nvidia-operator-validator" or not node:
            continue
        states = {str(s.get("name")): s for s in (pod.get("status") or {}).get("initContainerStatuses") or []}
        row = {}
        for container, ready_file in VALIDATIONS:
            if container not in states:
                continue
            state = states[container].get("state") or {}
            terminated = state.get("terminated")
            waiting = (state.get("waiting") or {}).get("reason", "")
            if terminated is not None and terminated.get("exitCode") == 0:
                row[ready_file] = "ready"
            elif terminated is not None or waiting == "CrashLoopBackOff" or states[container].get("restartCount"):
                row[ready_file] = "failed"
            else:
                row[ready_file] = "pending"
        table[node] = row
    return table


def duration(delta: timedelta) -> str:
    """A held time for people: `45s`, `12m`, `3h05m`."""
    seconds = max(int(delta.total_seconds()), 0)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def operand_pod_findings(snapshot: Snapshot, init_stuck_after: timedelta) -> list[Finding]:
    findings: list[Finding] = []
    for pod in snapshot.pods:
        operand = operand_of(pod)
        if operand is not None and not (pod.get("metadata") or {}).get("deletionTimestamp"):
            findings.extend(pod_findings(snapshot, pod, operand, init_stuck_after))
    return findings

