"""A cluster in memory for the controller's reconcile: the API's answers to its writes, and time passing.

It holds what the controller reads (Nodes, the driver and validator pods, the driver DaemonSet's newest revision
and status, each node's GPU pods) and does what the API server, the DaemonSet controller and the kubelet would do
with the plan's writes: merge patches, evictions a PodDisruptionBudget may refuse, driver pods on the nodes
labelled `nvidia.com/gpu.deploy.driver=true` (and only there), a deleted one terminating until the next tick and
then recreated from the newest revision (after `gap_ticks` without a pod, then `bind_ticks` waiting for the
scheduler), installing for a while (or crash-looping) before it is Running and Ready, validators that turn Ready
once the new driver is (or never do).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu_operator.agents.controller.cluster_state import ClusterState, DaemonSetFacts, NodeFacts, NodePods, PodFacts
from gpu_operator.agents.controller.reconcile import NodePatch, Plan, PodAction, nodes_needing_pods

DRIVER_DS = "nvidia-driver-daemonset"
DRIVER_LABEL = "nvidia.com/gpu.deploy.driver"
OLD, NEW = "rev-old", "rev-new"
NFD_PCI = {"feature.node.kubernetes.io/pci-10de.present": "true"}


@dataclass
class FakeNode:
    name: str
    labels: dict[str, str] = field(default_factory=lambda: dict(NFD_PCI))
    annotations: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    ready: bool = True
    driver: str | None = OLD
    digest: str = "digest-old"
    driver_ready: bool = True
    terminating: bool = False
    orphaned: bool = False
    """The driver pod has no owner (its DaemonSet is gone)."""
    restarts: int = 0
    install_ticks: int = 0
    """Ticks a new driver pod installs (Running, not Ready) before it is Ready."""
    crash_loop: bool = False
    """The new driver pod restarts every tick and never becomes Ready."""
    gap_ticks: int = 0
    """Ticks a deleted driver pod stays missing before the DaemonSet creates the new one."""
    bind_ticks: int = 0
    """Ticks a new driver pod waits for the scheduler (no nodeName yet)."""
    gpu_pods: int = 0
    jobs: int = 0
    pdb_blocks: bool = False
    validator: bool = True
    """A validator pod runs on the node (its DaemonSet selects it)."""
    validation_never: bool = False
    validator_ready: bool = True
    patches: list[NodePatch] = field(default_factory=list)
    pod_actions: list[PodAction] = field(default_factory=list)

    @property
    def selected(self) -> bool:
        """The driver DaemonSet's nodeSelector matches the node."""
        return self.labels.get(DRIVER_LABEL) == "true"


def driver_pod(node: FakeNode) -> PodFacts:
    bound = node.bind_ticks <= 0
    return PodFacts(f"driver-{node.name}", node.name if bound else "", DRIVER_DS, "" if node.orphaned else DRIVER_DS,
                    node.driver or "", node.digest, node.driver_ready, node.terminating, node.driver_ready,
                    0 if node.driver_ready else node.restarts, node.orphaned, node.name)


@dataclass
class FakeCluster:
    nodes: dict[str, FakeNode]
    revision: str = NEW
    digest: str = "digest-new"
    now: float = 1_000_000.0
    blocked_since: dict[str, float] = field(default_factory=dict)
    blocked_for: dict[str, str] = field(default_factory=dict)
    """The pod action whose refusal `blocked_since` times (the actuator starts afresh for a drain)."""
    desired_lag: bool = False
    """The DaemonSet's status still counts the nodes as they were at the last tick."""
    _desired: int | None = None

    def state(self) -> ClusterState:
        nodes = {n.name: NodeFacts(n.name, dict(n.labels), dict(n.annotations), n.unschedulable, n.ready)
                 for n in self.nodes.values()}
        pods = [driver_pod(n) for n in self.nodes.values() if n.driver is not None]
        pods += [PodFacts(f"validator-{n.name}", n.name, "nvidia-operator-validator", "v", "x", "", n.validator_ready)
                 for n in self.nodes.values() if n.validator]
        desired = sum(n.selected for n in self.nodes.values())
        if self.desired_lag and self._desired is not None:
            desired = self._desired
        ds = DaemonSetFacts(DRIVER_DS, self.revision, self.digest, desired, desired, desired, app=DRIVER_DS)
        state = ClusterState(nodes, tuple(pods), {DRIVER_DS: ds})
        needing = nodes_needing_pods(state)
        counts = {name: NodePods(self.nodes[name].gpu_pods, self.nodes[name].jobs, self.nodes[name].gpu_pods)
                  for name in needing}
        blocked = {name: at for name, at in self.blocked_since.items() if name in needing}
        return ClusterState(nodes, tuple(pods), {DRIVER_DS: ds}, counts, blocked)

    def pod_action(self, action: PodAction) -> None:
        node = self.nodes.get(action.node)
        if node is None:
            return
        node.pod_actions.append(action)
        if action.kind == "delete":
            node.terminating = True
        elif node.pdb_blocks and node.gpu_pods:
            if self.blocked_for.get(node.name, action.kind) != action.kind:
                self.blocked_since.pop(node.name, None)
            self.blocked_for[node.name] = action.kind
            self.blocked_since.setdefault(node.name, self.now)
        else:
            node.gpu_pods = 0

    def patch(self, patch: NodePatch) -> None:
        node = self.nodes.get(patch.node)
        if node is None:
            return
        node.patches.append(patch)
        for target, changes in ((node.labels, patch.labels), (node.annotations, patch.annotations)):
            for key, value in changes.items():
                if value is None:
                    target.pop(key, None)
                else:
                    target[key] = value
        if patch.unschedulable is not None:
            node.unschedulable = patch.unschedulable

    def carry_out(self, plan: Plan, limit: int | None = None) -> None:
        """The plan's writes in the actuator's order; `limit` stops after that many (a controller crash)."""
        writes = [*[(self.pod_action, a) for a in plan.pod_actions], *[(self.patch, p) for p in plan.patches]]
        for write, item in writes[:limit]:
            write(item)  # type: ignore[operator]

    def tick(self, seconds: float = 10.0) -> None:
        """Time passes: terminating driver pods go, the DaemonSet (re)creates the pods of the nodes it selects at
        the newest revision and deletes the others', drivers install or crash, validators pass, jobs end."""
        self.now += seconds
        self._desired = sum(n.selected for n in self.nodes.values())
        for node in self.nodes.values():
            if node.terminating or (node.driver is not None and not node.selected):
                node.driver, node.terminating, node.validator_ready, node.driver_ready = None, False, False, False
                node.orphaned = False
                continue
            if node.driver is None:
                if node.selected and node.gap_ticks > 0:
                    node.gap_ticks -= 1
                elif node.selected:
                    node.driver, node.digest, node.driver_ready, node.restarts = self.revision, self.digest, False, 0
            elif node.bind_ticks > 0:
                node.bind_ticks -= 1
            elif not node.driver_ready:
                if node.crash_loop:
                    node.restarts += 1
                elif node.install_ticks > 0:
                    node.install_ticks -= 1
                else:
                    node.driver_ready = True
            elif node.driver == self.revision and not node.validation_never:
                node.validator_ready = True
            node.jobs = max(0, node.jobs - 1)
