"""The driver manager's loop: observe the node, decide (:func:`.plan.decide`), act or wait, until an exit.

Each turn takes a fresh snapshot (the node, its pods, the host), so an action is issued only while what it
does does not hold yet, and an action whose effect is slow (a pod terminating) is not issued twice. An action
that fails after the API layer's retries is reported to the plan, which decides whether that ends the route
(cleanup: uncordon what it cordoned, restore the labels, exit 1) or a later step reacts (drain). A refused
eviction is remembered and retried after the poll interval. SIGTERM, SIGINT or SIGQUIT (the pod deleted while
it waits) and an API server that cannot be read turn the route into cleanup too; if even the cleanup cannot
read the node, the program exits 1 with what it knows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gpu_operator.agents.driver_manager import plan
from gpu_operator.agents.driver_manager.actions import (
    Action,
    Cordon,
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
from gpu_operator.agents.driver_manager.host import HostError
from gpu_operator.agents.driver_manager.kube import EvictionRefused, KubeFailure
from gpu_operator.agents.driver_manager.pods import PodFacts
from gpu_operator.agents.driver_manager.settings import Settings
from gpu_operator.agents.driver_manager.snapshot import HostFacts, NodeFacts, Snapshot
from gpu_operator.agents.signals import STOP, SignalSource

__all__ = ["Cluster", "DriverManager", "HostChanges", "HostReader"]


class Cluster(Protocol):
    """The API server side (:class:`.kube.NodeApi`); methods raise KubeFailure, `evict` also EvictionRefused."""

    def read_node(self) -> NodeFacts: ...
    def pods(self) -> tuple[PodFacts, ...]: ...
    def set_labels(self, labels: dict[str, str]) -> None: ...
    def cordon(self) -> None: ...
    def uncordon(self) -> None: ...
    def evict(self, namespace: str, name: str) -> None: ...


class HostReader(Protocol):
    """Reads the host (:class:`.host.HostProbe`); raises HostError."""

    def observe(self) -> HostFacts: ...


class HostChanges(Protocol):
    """Changes the host (:class:`.host.HostActions`); each returns "" or why it failed."""

    def unload_module(self, module: str) -> str: ...
    def unmount(self, path: str) -> str: ...
    def remove_file(self, path: str) -> str: ...
    def unbind_vfio(self, addresses: Sequence[str]) -> str: ...

_log = logging.getLogger("gpu_operator.agents.driver_manager")


@dataclass
class DriverManager:
    """One run of `uninstall_driver` against one node."""

    settings: Settings
    api: Cluster
    probe: HostReader
    host: HostChanges
    signals: SignalSource
    clock: Callable[[], float] = time.monotonic
    _last_wait: str = field(default="", init=False)

    def observe(self) -> Snapshot:
        return Snapshot(self.api.read_node(), self.api.pods(), self.probe.observe(), self.clock())

    def _perform(self, action: Action) -> str:
        """Do `action`; "" on success, else the reason it failed (an eviction refusal is raised)."""
        try:
            match action:
                case SetLabels(labels=labels):
                    self.api.set_labels(dict(labels))
                case Cordon():
                    self.api.cordon()
                case Uncordon():
                    self.api.uncordon()
                case Evict(namespace=namespace, name=name):
                    self.api.evict(namespace, name)
                case UnloadModule(module=module):
                    return self.host.unload_module(module)
                case Unmount(path=path):
                    return self.host.unmount(path)
                case RemoveFile(path=path):
                    return self.host.remove_file(path)
                case UnbindVfio(addresses=addresses):
                    return self.host.unbind_vfio(addresses)
        except KubeFailure as error:
            return str(error)
        return ""

    def _wait(self, wait: Wait) -> int | None:
        if wait.reason != self._last_wait:
            _log.info("%s", wait.reason)
            self._last_wait = wait.reason
        return self.signals.wait(max(wait.seconds, 0.0))

    def run(self) -> int:
        progress = plan.Progress()
        while True:
            number = self.signals.wait(0)
            if number in STOP:
                _log.warning("signal %d: stopping", number)
                progress = plan.stop(progress, f"stopped by signal {number}")
            try:
                snapshot = self.observe()
            except (KubeFailure, HostError) as error:
                if progress.route is plan.Route.CLEANUP:
                    _log.error("cannot restore the node: %s", error)
                    _log.error("exiting: %s", progress.failure)
                    return 1
                _log.error("cannot observe the node: %s", error)
                progress = plan.stop(progress, f"cannot observe the node: {error}")
                continue
            decision = plan.decide(self.settings, progress, snapshot)
            progress = decision.progress
            for note in decision.notes:
                _log.info("%s", note)
            match decision.decision:
                case Exit(code=code, message=message):
                    (_log.info if code == 0 else _log.error)("%s", message)
                    return code
                case Wait() as wait:
                    number = self._wait(wait)
                    if number in STOP:
                        _log.warning("signal %d: stopping", number)
                        progress = plan.stop(progress, f"stopped by signal {number}")
                case action:
                    self._last_wait = ""
                    _log.info("%s", action.describe())
                    try:
                        problem = self._perform(action)
                    except EvictionRefused as refused:
                        _log.info("eviction refused: %s", refused)
                        assert isinstance(action, Evict)
                        pod = f"{action.namespace}/{action.name}"
                        progress = plan.blocked(progress, pod, self.clock(), str(refused))
                        continue
                    if problem:
                        progress, note = plan.failed(progress, problem)
                        _log.warning("%s", note)
