"""A simulated node for the driver manager's decisions: the Node object, its pods, the controllers, the host.

The world answers actions as the API server and the kernel would: labels change, a cordon sets
`spec.unschedulable`, an eviction marks a pod terminating (or is refused while a disruption budget blocks it),
rmmod fails while a GPU pod still holds the driver. Each `tick` lets time pass: terminating pods go away, and the
DaemonSet controller deletes operand pods whose node no longer matches their selector and recreates them once
it matches again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from gpu_operator.agents.driver_manager.actions import (
    Action,
    Cordon,
    Decision,
    Evict,
    Exit,
    RemoveFile,
    SetLabels,
    UnbindVfio,
    Uncordon,
    UnloadModule,
    Unmount,
    Wait,
)
from gpu_operator.agents.driver_manager.labels import CORDONED_ANNOTATION
from gpu_operator.agents.driver_manager.plan import DRIVER_MODULES, Progress, blocked, decide, failed, stop
from gpu_operator.agents.driver_manager.pods import PodFacts
from gpu_operator.agents.driver_manager.settings import Settings
from gpu_operator.agents.driver_manager.snapshot import HostFacts, NodeFacts, Snapshot

__all__ = ["BLOCKED", "REFUSED", "Run", "World", "drive", "gpu_pod", "operand_pod"]

BLOCKED = "blocked"
NAMESPACE = "gpu-operator"


def operand_pod(label: str, name: str | None = None, namespace: str = NAMESPACE, *, stuck: bool = False) -> PodFacts:
    """A DaemonSet pod selected by `label=true` (`stuck`: it never terminates; its name says so)."""
    short = label.rsplit(".", 1)[-1]
    return PodFacts(namespace, name or (f"{short}-stuck" if stuck else f"{short}-pod"), node_selector={label: "true"},
                    controller="DaemonSet")


def gpu_pod(name: str, namespace: str = "default", **facts: object) -> PodFacts:
    return PodFacts(namespace, name, **{"controller": "ReplicaSet", "gpu": True, **facts})  # type: ignore[arg-type]


@dataclass
class World:
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    pods: dict[str, PodFacts] = field(default_factory=dict)
    modules: set[str] = field(default_factory=set)
    loaded_digest: str = ""
    host_driver: str = ""
    mounts: list[str] = field(default_factory=list)
    pid_file: bool = False
    vfio: list[str] = field(default_factory=list)
    mellanox: bool = False
    mofed_ready: bool = False
    mofed_ready_after: float = 0.0
    #: pod key -> until when its eviction is refused (inf: always)
    pdb_blocked: dict[str, float] = field(default_factory=dict)
    #: modules rmmod always refuses
    unload_fails: set[str] = field(default_factory=set)
    #: non-GPU pods that hold the driver too (rmmod fails while they exist)
    holders: set[str] = field(default_factory=set)
    now: float = 0.0
    terminate_after: float = 1.0
    _terminating_since: dict[str, float] = field(default_factory=dict)
    _removed_operands: dict[str, PodFacts] = field(default_factory=dict)
    actions: list[Action] = field(default_factory=list)

    def add(self, *pods: PodFacts) -> World:
        for pod in pods:
            self.pods[pod.key] = pod
        return self

    # --- what the driver manager observes -------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        host = HostFacts(
            host_driver=self.host_driver,
            modules=frozenset(self.modules),
            loaded_digest=self.loaded_digest,
            driver_mounts=tuple(self.mounts),
            pid_file=self.pid_file,
            vfio_bound=tuple(self.vfio),
            mellanox=self.mellanox,
            mofed_ready=self.mofed_ready or (self.mellanox and self.now >= self.mofed_ready_after > 0),
        )
        node = NodeFacts(dict(self.labels), dict(self.annotations), self.unschedulable)
        return Snapshot(node, tuple(self.pods.values()), host, self.now)

    # --- how it answers ------------------------------------------------------------------------------------

    def _driver_held(self) -> bool:
        return any(
            (pod.gpu or key in self.holders) and not pod.finished for key, pod in self.pods.items()
        )

    def apply(self, action: Action) -> str:
        """Perform `action`: "" when done, BLOCKED for a refused eviction, else the failure."""
        self.actions.append(action)
        match action:
            case SetLabels(labels=labels):
                self.labels.update(dict(labels))
            case Cordon():
                self.unschedulable = True
                self.annotations[CORDONED_ANNOTATION] = "true"
            case Uncordon():
                self.unschedulable = False
                self.annotations.pop(CORDONED_ANNOTATION, None)
            case Evict(namespace=namespace, name=name):
                key = f"{namespace}/{name}"
                if key not in self.pods:
                    return ""
                if self.now < self.pdb_blocked.get(key, -1.0):
                    return BLOCKED
                self.pods[key] = dataclasses.replace(self.pods[key], terminating=True)
                self._terminating_since.setdefault(key, self.now)
            case UnloadModule(module=module):
                if module in self.unload_fails or (module in DRIVER_MODULES and self._driver_held()):
                    return f"rmmod {module}: Module {module} is in use"
                self.modules.discard(module)
            case Unmount(path=path):
                self.mounts.remove(path)
            case RemoveFile():
                self.pid_file = False
            case UnbindVfio(addresses=addresses):
                self.vfio = [address for address in self.vfio if address not in addresses]
        return ""

    def tick(self, seconds: float) -> None:
        """Let time pass: pods finish terminating, the DaemonSet controller follows the node's labels."""
        self.now += seconds
        for key, since in list(self._terminating_since.items()):
            if self.now - since >= self.terminate_after:
                self.pods.pop(key, None)
                del self._terminating_since[key]
        for key, pod in list(self.pods.items()):
            if pod.controller != "DaemonSet" or not pod.node_selector or pod.terminating:
                continue
            if any(self.labels.get(k) != v for k, v in pod.node_selector.items()) and "stuck" not in pod.name:
                self.pods[key] = dataclasses.replace(pod, terminating=True)
                self._terminating_since[key] = self.now
                self._removed_operands[key] = pod
        for key, pod in list(self._removed_operands.items()):
            if key not in self.pods and all(self.labels.get(k) == v for k, v in pod.node_selector.items()):
                self.pods[key] = pod
                del self._removed_operands[key]


@dataclass
class Run:
    """What a driven run did: its exit, the actions in order, the decisions with the snapshot each came from."""

    exit: Exit
    progress: Progress
    actions: list[Action]
    trace: list[tuple[Snapshot, Decision]]
    notes: list[str]

    def kinds(self) -> list[str]:
        return [type(action).__name__ for action in self.actions]

    def waits(self) -> list[str]:
        return [decision.reason for _, decision in self.trace if isinstance(decision, Wait)]


REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."


def drive(
    settings: Settings, world: World, *, limit: int = 5000, stop_when: Callable[[World], bool] | None = None,
) -> Run:
    """Run the decisions against `world` until they exit; `stop_when` delivers a stop (SIGTERM) once it holds."""
    progress = Progress()
    trace: list[tuple[Snapshot, Decision]] = []
    notes: list[str] = []
    stopped = False
    for _ in range(limit):
        if stop_when is not None and not stopped and stop_when(world):
            progress, stopped = stop(progress, "stopped by signal 15"), True
        snapshot = world.snapshot()
        plan = decide(settings, progress, snapshot)
        progress = plan.progress
        notes += plan.notes
        trace.append((snapshot, plan.decision))
        match plan.decision:
            case Exit() as done:
                return Run(done, progress, world.actions, trace, notes)
            case Wait(seconds=seconds):
                world.tick(max(min(seconds, settings.poll_interval), 0.01))
            case action:
                outcome = world.apply(action)
                if outcome == BLOCKED:
                    assert isinstance(action, Evict)
                    progress = blocked(progress, f"{action.namespace}/{action.name}", world.now, REFUSED)
                elif outcome:
                    progress, note = failed(progress, outcome)
                    notes.append(note)
                world.tick(0.1)
    raise AssertionError(f"no exit after {limit} decisions; last: {trace[-3:]}")
