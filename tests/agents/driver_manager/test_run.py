"""The driver manager's loop (observe, decide, act or wait) against the simulated node, with failures injected."""

from __future__ import annotations

import logging
import signal
from collections.abc import Sequence
from dataclasses import replace

import pytest

from gpu_operator.agents.driver_manager.actions import (
    Cordon,
    Evict,
    RemoveFile,
    SetLabels,
    UnbindVfio,
    Uncordon,
    UnloadModule,
    Unmount,
)
from gpu_operator.agents.driver_manager.host import HostError
from gpu_operator.agents.driver_manager.kube import EvictionRefused, KubeFailure
from gpu_operator.agents.driver_manager.pods import PodFacts
from gpu_operator.agents.driver_manager.run import DriverManager
from gpu_operator.agents.driver_manager.settings import DrainOptions, Settings
from gpu_operator.agents.driver_manager.snapshot import HostFacts, NodeFacts
from tests.agents.driver_manager.world import BLOCKED, REFUSED, World, gpu_pod, operand_pod

PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
SETTINGS = Settings(node_name="gpu-0", desired_digest="d" * 64, enable_auto_drain=False, poll_interval=1.0)


class Cluster:
    """The API server side of the world; `failing` names methods that raise KubeFailure (a count each)."""

    def __init__(self, world: World, failing: dict[str, int] | None = None) -> None:
        self.world = world
        self.failing = dict(failing or {})

    def _check(self, method: str) -> None:
        if self.failing.get(method, 0) > 0:
            self.failing[method] -= 1
            raise KubeFailure(f"{method}: 503 the server is unavailable (gave up after 6 attempts)")

    def read_node(self) -> NodeFacts:
        self._check("read_node")
        return self.world.snapshot().node

    def pods(self) -> tuple[PodFacts, ...]:
        self._check("pods")
        return self.world.snapshot().pods

    def set_labels(self, labels: dict[str, str]) -> None:
        self._check("set_labels")
        self.world.apply(SetLabels(tuple(labels.items()), "test"))

    def cordon(self) -> None:
        self._check("cordon")
        self.world.apply(Cordon())

    def uncordon(self) -> None:
        self._check("uncordon")
        self.world.apply(Uncordon())

    def evict(self, namespace: str, name: str) -> None:
        self._check("evict")
        if self.world.apply(Evict(namespace, name, "test")) == BLOCKED:
            raise EvictionRefused(f"429 {REFUSED}")


class Host:
    def __init__(self, world: World, broken: bool = False) -> None:
        self.world = world
        self.broken = broken

    def observe(self) -> HostFacts:
        if self.broken:
            raise HostError("/proc/modules does not exist")
        return self.world.snapshot().host

    def unload_module(self, module: str) -> str:
        return self.world.apply(UnloadModule(module))

    def unmount(self, path: str) -> str:
        return self.world.apply(Unmount(path))

    def remove_file(self, path: str) -> str:
        return self.world.apply(RemoveFile(path))

    def unbind_vfio(self, addresses: Sequence[str]) -> str:
        return self.world.apply(UnbindVfio(tuple(addresses)))


class Signals:
    """Waiting lets the world's time pass; `at` delivers a signal once the world's clock reaches it."""

    def __init__(self, world: World, at: float | None = None, number: int = signal.SIGTERM) -> None:
        self.world, self.at, self.number = world, at, number

    def wait(self, timeout: float | None) -> int | None:
        self.world.tick(timeout or 0.0)
        if self.at is not None and self.world.now >= self.at:
            self.at = None
            return self.number
        return None


def manager(world: World, settings: Settings = SETTINGS, cluster: Cluster | None = None, host: Host | None = None,
            signals: Signals | None = None) -> DriverManager:
    return DriverManager(settings, cluster or Cluster(world), host or Host(world), host or Host(world),
                         signals or Signals(world), clock=lambda: world.now)


def node(**facts: object) -> World:
    base: dict[str, object] = {"labels": {PLUGIN: "true"}, "modules": {"nvidia", "nvidia_uvm"}}
    return World(**{**base, **facts}).add(operand_pod(PLUGIN))  # type: ignore[arg-type]


def test_an_upgrade_runs_to_exit_0_and_logs_each_action(caplog: pytest.LogCaptureFixture) -> None:
    world = node().add(gpu_pod("train"))
    with caplog.at_level(logging.INFO):
        assert manager(world).run() == 0
    text = caplog.text
    assert "route upgrade" in text and "evict GPU pod default/train" in text and "unload kernel module nvidia" in text
    assert text.count("waiting for 1 operand pods to terminate") == 1  # a wait is logged once, not every poll
    assert world.labels == {PLUGIN: "true"} and not world.unschedulable and not world.modules


def test_refused_evictions_are_retried_once_per_poll_interval(caplog: pytest.LogCaptureFixture) -> None:
    world = node(pdb_blocked={"default/train": 4.5}).add(gpu_pod("train"))
    with caplog.at_level(logging.INFO):
        assert manager(world).run() == 0
    assert 3 <= caplog.text.count("eviction refused: 429") <= 6


def test_an_api_failure_mid_run_restores_the_node_and_exits_1() -> None:
    world = node().add(gpu_pod("train"))
    assert manager(world, cluster=Cluster(world, {"evict": 1})).run() == 1
    assert world.labels == {PLUGIN: "true"} and not world.unschedulable


def test_a_node_that_cannot_be_read_turns_into_cleanup_and_gives_up_if_cleanup_cannot_read_it_either(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = node()
    assert manager(world, cluster=Cluster(world, {"read_node": 2})).run() == 1
    assert "cannot restore the node" in caplog.text
    world = node(labels={PLUGIN: "paused-for-driver-upgrade"})
    assert manager(world, cluster=Cluster(world, {"pods": 1})).run() == 1
    assert world.labels == {PLUGIN: "true"}  # the second look worked: restored before exiting


def test_an_unreadable_host_is_a_failure_not_a_crash() -> None:
    world = node()
    assert manager(world, host=Host(world, broken=True)).run() == 1


def test_sigterm_while_waiting_uncordons_restores_and_exits_1(caplog: pytest.LogCaptureFixture) -> None:
    world = node(pdb_blocked={"default/train": float("inf")}).add(gpu_pod("train"))
    assert manager(world, signals=Signals(world, at=20.0)).run() == 1
    assert "stopped by signal 15" in caplog.text
    assert world.labels == {PLUGIN: "true"} and not world.unschedulable


def test_a_failed_restore_is_reported_in_the_exit_message(caplog: pytest.LogCaptureFixture) -> None:
    world = node().add(gpu_pod("ds", controller="DaemonSet"))
    assert manager(world, cluster=Cluster(world, {"set_labels": 0, "uncordon": 1})).run() == 1
    assert "cleanup also failed" in caplog.text and "uncordon" in caplog.text


def test_drain_timeout_fails_with_the_budget_named() -> None:
    world = node(pdb_blocked={"default/train": float("inf")}).add(gpu_pod("train"))
    settings = replace(SETTINGS, drain=DrainOptions(timeout=10.0))
    assert manager(world, settings).run() == 1
    assert world.labels == {PLUGIN: "true"} and not world.unschedulable
