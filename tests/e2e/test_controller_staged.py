"""A staged driver rollout against a real API server: three pools, canary first, the rest after its soak.

Five KWOK GPU nodes in three AKS pools (`kubernetes.azure.com/agentpool`): the fleet's `a100mig` as the canary
(one node), its `h100` and a pool the config does not create, `pool-c` (two nodes each), on the fleet's driver
with `operator.driver.rollout` = stage `canary` (a100mig, with a soak) then `rest` (`*`). The controller
runs as a local process with its rendered ServiceAccount's token (which must be enough for the gate: its status
ConfigMap read back, its Events). Then the driver version changes for every pool at once (one new template):

1. The canary's new driver crash-loops (KWOK stage `kwok-stages/slow-driver.yaml` on node `slow-crash`): its node
   fails after more than 10 restarts, the rollout halts at stage `canary` with that reason (the status ConfigMap,
   a `GPUDriverRolloutHalted` Event, `gpu-operator upgrade status` exiting 3 and naming it), and no node of the
   other pools is ever cordoned or taken past `upgrade-required`.
2. A healthy driver: the stages run in order, and no node of `rest` is cordoned before the canary has been done
   for its soak; every node ends `upgrade-done` on the new driver.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap, Event

from gpu_operator.cli import main
from tests.e2e.apply import KindTable, server_side_apply
from tests.e2e.control_plane import ControlPlane, running_control_plane, stop_process_group
from tests.e2e.controller_fleet import (
    IN_PROGRESS,
    NAMESPACE,
    STATE,
    controller_objects,
    gpu_node,
    histogram,
    log_tail,
    node_map,
    pods_of,
    start_controller,
)
from tests.e2e.report import note
from tests.e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

Object = dict[str, Any]
POOL_LABEL = "kubernetes.azure.com/agentpool"
SOAK = 15
CANARY_POOL = "a100mig"
ROLLOUT = {"stages": [{"name": "canary", "pools": [CANARY_POOL], "soakSeconds": SOAK},
                      {"name": "rest", "pools": ["*"]}]}
SLOW_LABEL = ("e2e.pulumi-gpu-operator/driver", "slow")  # what kwok-stages/slow-driver.yaml selects
OLD, NEW = "595.91.07", "595.100.01"


def _node(name: str, pool: str) -> Object:
    node = gpu_node(0)
    node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = name
    node["metadata"]["labels"][POOL_LABEL] = pool
    return node


def _objects(version: str) -> list[Object]:
    return controller_objects(version, parallel=2, unavailable="100%", rollout=ROLLOUT)


def _driver(version: str, slow: bool) -> list[Object]:
    [driver] = [o for o in _objects(version) if o["kind"] == "DaemonSet"
                and o["metadata"]["name"] == "nvidia-driver-daemonset"]
    if slow:
        driver["spec"]["template"]["metadata"].setdefault("labels", {})[SLOW_LABEL[0]] = SLOW_LABEL[1]
    return [driver]


class _Timeline(threading.Thread):
    """Samples the nodes: each node's states in order, and when it was first seen cordoned and done."""

    def __init__(self, client: Client) -> None:
        super().__init__(daemon=True)
        self.client, self.stop = client, threading.Event()
        self.states: dict[str, list[str]] = {}
        self.first_cordoned: dict[str, float] = {}
        self.done_at: dict[str, float] = {}

    def run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                nodes = node_map(self.client)
            except Exception:  # the control plane is stopping
                return
            now = time.monotonic()
            for name, node in nodes.items():
                state = (node.metadata.labels or {}).get(STATE, "")
                history = self.states.setdefault(name, [])
                if not history or history[-1] != state:
                    history.append(state)
                if node.spec.unschedulable:
                    self.first_cordoned.setdefault(name, now)
                if state == "upgrade-done" and any(s in IN_PROGRESS for s in history):
                    self.done_at.setdefault(name, now)


def _start(plane: ControlPlane, workdir: Any, nodes: dict[str, str]) -> tuple[Client, Any, dict[str, str]]:
    """The controller and its objects on `nodes` (name -> pool), every node `upgrade-done` on the old driver."""
    admin = plane.client()
    failures = server_side_apply(admin, [*_objects(OLD), *(_node(n, p) for n, p in nodes.items())], KindTable(),
                                 dry_run=False, field_manager="e2e-controller")
    assert not failures, "\n".join(map(str, failures))
    process = start_controller(plane, admin, workdir)
    wait_until(lambda: sorted((n.metadata.labels or {}).get(STATE, "") for n in node_map(admin).values())
               == ["upgrade-done"] * len(nodes), timeout=120, what="every node upgrade-done on the old driver")
    old = {p.spec.nodeName: p.metadata.labels["controller-revision-hash"]
           for p in pods_of(admin, "nvidia-driver-daemonset")}
    return admin, process, old


def _published(admin: Client) -> dict[str, Any]:
    data = admin.get(ConfigMap, "gpu-operator-status", namespace=NAMESPACE).data or {}
    return json.loads(data.get("rollout") or "{}")


@dataclass(frozen=True)
class Rollout:
    admin: Client
    old: dict[str, str]
    """Each node's driver pod revision before the change."""
    timeline: _Timeline
    started: float


@pytest.fixture
def plane(e2e_tools: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(e2e_tools, tmp_path_factory.mktemp("staged-plane")) as plane:
        yield plane


@contextlib.contextmanager
def _staged_rollout(plane: ControlPlane, workdir: Any, nodes: dict[str, str], slow: bool) -> Iterator[Rollout]:
    """The controller on `nodes`, then the new driver for every pool at once, sampled by a timeline; a failure is
    reported with where the nodes are and the controller's log."""
    admin, process, old = _start(plane, workdir, nodes)
    timeline = _Timeline(admin)
    timeline.start()
    try:
        assert not server_side_apply(admin, _driver(NEW, slow=slow), KindTable(), dry_run=False,
                                     field_manager="e2e-controller")
        yield Rollout(admin, old, timeline, time.monotonic())
        assert process.poll() is None, log_tail(process)
    except (AssertionError, TimeoutError) as error:
        pytest.fail(f"{error}\n{histogram(admin)}\n{log_tail(process)}", pytrace=False)
    finally:
        timeline.stop.set()
        timeline.join(timeout=10)
        stop_process_group(process)


def test_a_crash_looping_canary_halts_the_rollout_before_any_other_pool(
        plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = {"slow-crash": CANARY_POOL, "b-0": "h100", "b-1": "h100", "c-0": "pool-c", "c-1": "pool-c"}
    with _staged_rollout(plane, tmp_path_factory.mktemp("staged-crash"), nodes, slow=True) as rollout:
        admin, timeline = rollout.admin, rollout.timeline
        wait_until(lambda: _published(admin).get("halted", "").startswith("stage canary:"), timeout=150,
                   what="the rollout to halt at stage canary")
        time.sleep(10)  # rounds go on (the crashing pod keeps changing), and must admit no one
        published = _published(admin)
        assert published["halted"] == "stage canary: the driver upgrade failed on slow-crash", published
        assert [stage["phase"] for stage in published["stages"]] == ["halted", "waiting"]
        for name in ("b-0", "b-1", "c-0", "c-1"):
            assert name not in timeline.first_cordoned, (name, timeline.states)
            assert set(timeline.states[name]) <= {"upgrade-done", "upgrade-required"}, timeline.states[name]
        events = [e for e in admin.list(Event, namespace=NAMESPACE) if e.reason == "GPUDriverRolloutHalted"]
        assert events and events[0].involvedObject.name == "gpu-operator-status" and events[0].type == "Warning"
        capsys.readouterr()
        status = main(["upgrade", "status", "--kubeconfig", str(plane.admin_kubeconfig), "-n", NAMESPACE,
                       "-o", "json"])
        report = json.loads(capsys.readouterr().out)
        assert status == 3 and "slow-crash" in report["halted"], report
        note(f"controller staged rollout: halted at stage canary ({published['halted']}); h100 and pool-c never "
             f"cordoned ({ {n: timeline.states[n] for n in ('b-0', 'c-0')} }); `upgrade status` exit 3")


def test_a_healthy_driver_goes_stage_by_stage_each_after_its_soak(
        plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> None:
    nodes = {"canary-0": CANARY_POOL, "b-0": "h100", "b-1": "h100", "c-0": "pool-c", "c-1": "pool-c"}
    phases: list[tuple[str, ...]] = []
    with _staged_rollout(plane, tmp_path_factory.mktemp("staged-healthy"), nodes, slow=False) as rollout:
        admin, timeline = rollout.admin, rollout.timeline

        def finished() -> bool:
            published = _published(admin)
            seen = tuple(stage["phase"] for stage in published.get("stages", ()))
            if seen and (not phases or phases[-1] != seen):
                phases.append(seen)
            assert not published.get("halted"), published
            return bool(published.get("finished")) and len(timeline.done_at) == len(nodes)

        wait_until(finished, timeout=180, what="the staged rollout to finish")
        took = time.monotonic() - rollout.started
        canary_done = timeline.done_at["canary-0"]
        first_rest = min(timeline.first_cordoned[name] for name in nodes if name != "canary-0")
        # the soak counts from the controller's round that saw the canary done; the sampler sees it within 0.2 s
        assert first_rest - canary_done >= SOAK - 1, (first_rest - canary_done, timeline.states)
        assert ("soaking", "waiting") in phases and phases[-1] == ("done", "done"), phases
        drivers = {p.spec.nodeName: p.metadata.labels["controller-revision-hash"]
                   for p in pods_of(admin, "nvidia-driver-daemonset") if p.metadata.deletionTimestamp is None}
        assert all(drivers[name] != rollout.old[name] for name in nodes), (drivers, rollout.old)
        assert all(not node.spec.unschedulable for node in node_map(admin).values())
        note(f"controller staged rollout: healthy, {len(nodes)} nodes in 3 pools in {took:.1f} s; the rest started "
             f"{first_rest - canary_done:.1f} s after the canary was done (soak {SOAK} s); phases {phases}")
