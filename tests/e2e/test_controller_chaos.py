"""The operator controller when the control plane misbehaves: a driver rollout of KWOK GPU nodes at
`maxParallelUpgrades: 5`, with faults injected mid-rollout, on a control plane of its own.

Scenarios: undisturbed (the baseline); kube-apiserver SIGKILLed and started again 10 s later; etcd frozen
(SIGSTOP) for 20 s; the leader SIGKILLed with a standby running; two replicas all along; the leader frozen
while the standby takes over, then thawed; SIGTERM of the leader; the API server overloaded (low max-in-flight
limits and load clients using the controller's own ServiceAccount, so its requests get 429).

The same invariants hold after each, checked from the cluster and from the API server's audit log (every
request of the controller's ServiceAccount, each tied to its replica by the User-Agent the replica sends):
the rollout finishes (every node `upgrade-done` on the new driver, none left cordoned); never more than
`maxParallelUpgrades` nodes in progress; no pod evicted twice; no write from a replica that does not hold the
Lease (the holder at any instant is the replica whose Lease write came last); no traceback in any log; a
replica exits only when another took its Lease (1) or on SIGTERM (0, within 5 s, the Lease released).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from lightkube.resources.core_v1 import Node, Pod

from gpu_operator.agents.controller.leader import LEASE_NAME
from tests.e2e.agents import service_account_token
from tests.e2e.apply import KindTable, server_side_apply
from tests.e2e.control_plane import ControlPlane, running_control_plane, stop_process_group
from tests.e2e.controller_fleet import (
    IN_PROGRESS,
    NAMESPACE,
    STATE,
    controller_objects,
    gpu_node,
    gpu_pod,
    histogram,
    log_tail,
    start_controller,
)
from tests.e2e.report import note
from tests.e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

NODES = int(os.environ.get("CHAOS_E2E_NODES", "30"))
PARALLEL = 5
DRIVER = "nvidia-driver-daemonset"
VERSIONS = ("595.91.07", "595.100.01")
ACCOUNT = f"system:serviceaccount:{NAMESPACE}:gpu-operator"
LOAD_AGENT = "e2e-load"
WRITES = {"create", "update", "patch", "delete", "deletecollection"}
ROLLOUT_SECONDS = 300.0
#: The pod deletion's and the validation's timeouts: the chart's defaults' order of magnitude, so a slow API
#: server delays the rollout instead of failing nodes (no fault here is meant to fail one)
TIMEOUTS = (120, 300)
Object = dict[str, Any]


@dataclass
class Replica:
    name: str
    process: Any
    identity: str = ""
    exit_seconds: float | None = None

    @property
    def agent(self) -> str:
        return f"gpu-operator-controller ({self.identity})"

    def log(self) -> str:
        return Path(self.process.log_path).read_text(errors="replace")


@dataclass
class Outcome:
    seconds: float
    max_in_progress: int
    events: list[Object]
    states: dict[str, list[str]] = field(default_factory=dict)
    worst: dict[str, str] = field(default_factory=dict)


class Fleet:
    """The chaos fleet on its plane: nodes `chaos-NNN`, the controller's objects, replicas started per scenario."""

    def __init__(self, plane: ControlPlane, workdir: Path) -> None:
        self.plane, self.workdir, self.admin = plane, workdir, plane.client()
        self.version = 0
        self.replicas: list[Replica] = []
        self.watcher: _Watcher | None = None
        self.names = [f"chaos-{i:03d}" for i in range(NODES)]

    def _nodes(self) -> list[Object]:
        nodes = []
        for name in self.names:
            node = gpu_node(0)
            node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = name
            nodes.append(node)
        return nodes

    def _driver(self, version: str) -> list[Object]:
        return [o for o in controller_objects(version, parallel=PARALLEL, unavailable="100%", timeouts=TIMEOUTS)
                if o["kind"] == "DaemonSet" and o["metadata"]["name"] == DRIVER]

    def apply(self, objects: list[Object]) -> None:
        failures = server_side_apply(self.admin, objects, KindTable(), dry_run=False, field_manager="e2e-chaos")
        assert not failures, "\n".join(map(str, failures))

    def set_up(self) -> None:
        self.apply([*controller_objects(VERSIONS[0], parallel=PARALLEL, unavailable="100%", timeouts=TIMEOUTS), *self._nodes()])
        first = self.start("setup")
        wait_until(lambda: sorted(self.states().values()) == ["upgrade-done"] * NODES and self.drivers_current(),
                   timeout=240, what=f"{NODES} nodes labelled and upgrade-done on the first driver")
        self.stop(first)

    # --- replicas --------------------------------------------------------------------------------------------

    def start(self, name: str) -> Replica:
        workdir = self.workdir / f"{name}-{len(self.replicas)}"
        workdir.mkdir()
        replica = Replica(name, start_controller(self.plane, self.admin, workdir))
        replica.identity = f"{socket.gethostname()}_{replica.process.pid}"
        self.replicas.append(replica)
        return replica

    def leads(self, replica: Replica) -> bool:
        from lightkube.resources.coordination_v1 import Lease
        try:
            lease = self.admin.get(Lease, LEASE_NAME, namespace=NAMESPACE)
        except Exception:
            return False
        return bool(lease.spec and lease.spec.holderIdentity == replica.identity)

    def holder(self) -> str:
        from lightkube.resources.coordination_v1 import Lease
        try:
            return self.admin.get(Lease, LEASE_NAME, namespace=NAMESPACE).spec.holderIdentity or ""
        except Exception:
            return ""

    def stop(self, replica: Replica) -> int:
        """SIGTERM; the replica must exit by itself (a kubelet would SIGKILL it after 30 s)."""
        started = time.monotonic()
        replica.process.send_signal(signal.SIGTERM)
        try:
            code = replica.process.wait(timeout=30)
        except Exception:
            stop_process_group(replica.process)
            pytest.fail(f"{replica.name} ignored SIGTERM for 30 s\n{log_tail(replica.process)}", pytrace=False)
        replica.exit_seconds = time.monotonic() - started
        return code

    def stop_all(self) -> None:
        for replica in self.replicas:
            if replica.process.poll() is None:
                os.killpg(replica.process.pid, signal.SIGCONT)  # a frozen one would not see SIGTERM
                self.stop(replica)

    # --- reading the cluster ------------------------------------------------------------------------------

    def _read(self, read: Callable[[], Any]) -> Any:
        for _ in range(20):  # the API server may be down, or throttled: the admin read is tried again
            try:
                return read()
            except Exception:
                time.sleep(0.5)
        return read()

    def states(self) -> dict[str, str]:
        nodes = self._read(lambda: list(self.admin.list(Node)))
        return {n.metadata.name: (n.metadata.labels or {}).get(STATE, "") for n in nodes
                if n.metadata.name in self.names}

    def cordoned(self) -> list[str]:
        return sorted(n.metadata.name for n in self._read(lambda: list(self.admin.list(Node)))
                      if n.metadata.name in self.names and n.spec.unschedulable)

    def driver_revisions(self) -> dict[str, str]:
        pods = self._read(lambda: list(self.admin.list(Pod, namespace=NAMESPACE, labels={"app": DRIVER})))
        return {p.spec.nodeName: p.metadata.labels.get("controller-revision-hash", "") for p in pods
                if p.metadata.deletionTimestamp is None and p.spec.nodeName}

    def drivers_current(self) -> bool:
        revisions = self.driver_revisions()
        return set(self.names) <= set(revisions) and len({revisions[n] for n in self.names}) == 1

    # --- one rollout ---------------------------------------------------------------------------------------

    def rollout(self, inject: Callable[[Fleet], None] = lambda fleet: None) -> Outcome:
        """Change the driver version and run the rollout to its end, `inject` acting meanwhile."""
        before = self.driver_revisions()
        mark = len(self.plane.audit_events(ACCOUNT))
        self.apply([gpu_pod(name) for name in self.names])  # the previous rollout evicted them
        self.version += 1
        watcher = self.watcher = _Watcher(self)
        watcher.start()
        started = time.monotonic()
        self.apply(self._driver(VERSIONS[self.version % 2]))
        try:
            inject(self)

            def finished() -> bool:
                revisions = self.driver_revisions()
                return (sorted(self.states().values()) == ["upgrade-done"] * NODES
                        and all(revisions.get(n, before.get(n)) != before.get(n) for n in self.names)
                        and self.drivers_current() and not self.cordoned())

            wait_until(finished, timeout=ROLLOUT_SECONDS, what="every node upgrade-done on the new driver, none cordoned")
        except TimeoutError as error:
            logs = "\n".join(f"--- {r.name} ---\n{log_tail(r.process)}" for r in self.replicas[-2:])
            pytest.fail(f"{error}\n{histogram(self.admin)}\n{logs}", pytrace=False)
        finally:
            watcher.stop.set()
            watcher.join(timeout=10)
        seconds = time.monotonic() - started
        return Outcome(seconds, watcher.max_in_progress, self.plane.audit_events(ACCOUNT)[mark:], watcher.states,
                       watcher.worst)

    def wait_progress(self, count: int) -> None:
        """Until `count` nodes have entered the upgrade in this rollout."""
        def moved() -> bool:
            histories = self.watcher.states.values() if self.watcher else ()
            return sum(any(state in IN_PROGRESS for state in history) for history in histories) >= count

        wait_until(moved, timeout=120, what=f"{count} nodes into the rollout", interval=0.2)


class _Watcher(threading.Thread):
    """Samples the nodes all along (through API outages too): the worst in-progress count, each node's states."""

    def __init__(self, fleet: Fleet) -> None:
        super().__init__(daemon=True)
        self.fleet, self.stop = fleet, threading.Event()
        self.max_in_progress = 0
        self.worst: dict[str, str] = {}
        """The nodes in progress at the worst sample, and their states (to say what went wrong)."""
        self.states: dict[str, list[str]] = {}

    def run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                nodes = list(self.fleet.admin.list(Node))
            except Exception:  # the API server is down or stalled: sample again
                continue
            states = {n.metadata.name: (n.metadata.labels or {}).get(STATE, "") for n in nodes}
            in_progress = {name: state for name, state in states.items() if state in IN_PROGRESS}
            if len(in_progress) > self.max_in_progress:
                self.max_in_progress, self.worst = len(in_progress), in_progress
            for name, state in states.items():
                history = self.states.setdefault(name, [])
                if not history or history[-1] != state:
                    history.append(state)


# --- the invariants, from the audit log ------------------------------------------------------------------------


def _when(event: Object) -> datetime:
    return datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00"))


def _is_lease(event: Object) -> bool:
    ref = event.get("objectRef", {})
    return ref.get("resource") == "leases" and ref.get("name") == LEASE_NAME


def _ok(event: Object) -> bool:
    return int(event.get("responseStatus", {}).get("code", 0)) < 300


def writes_without_the_lease(events: list[Object], everything: list[Object]) -> list[str]:
    """Writes (other than the Lease's) by a replica that was not the last to write the Lease before them."""
    lease_writes = sorted((_when(e), e["userAgent"]) for e in everything
                          if _is_lease(e) and e["verb"] in WRITES and _ok(e))
    violations = []
    for event in events:
        if event["verb"] not in WRITES or _is_lease(event) or not event.get("userAgent", "").startswith(
                "gpu-operator-controller"):
            continue
        at = _when(event)
        earlier = [agent for when, agent in lease_writes if when <= at]
        holder = earlier[-1] if earlier else ""
        if holder != event["userAgent"]:
            ref = event.get("objectRef", {})
            violations.append(f"{at.isoformat()} {event['userAgent']} {event['verb']} {ref.get('resource')}/"
                              f"{ref.get('name')} while {holder or 'nobody'} held the Lease")
    return violations


def evicted_twice(events: list[Object]) -> list[str]:
    evictions = Counter(f"{e['objectRef'].get('namespace')}/{e['objectRef'].get('name')}" for e in events
                        if e.get("objectRef", {}).get("subresource") == "eviction" and e["verb"] == "create"
                        and _ok(e))
    return sorted(pod for pod, count in evictions.items() if count > 1)


def check(fleet: Fleet, outcome: Outcome, what: str) -> None:
    everything = fleet.plane.audit_events(ACCOUNT)
    assert outcome.max_in_progress <= PARALLEL, (
        f"{what}: {outcome.max_in_progress} nodes in progress at once: {outcome.worst}\n"
        + "\n".join(f"{name}: {history}" for name, history in sorted(outcome.states.items())[:10]))
    assert not fleet.cordoned(), f"{what}: left cordoned: {fleet.cordoned()}"
    assert evicted_twice(outcome.events) == [], f"{what}: evicted twice: {evicted_twice(outcome.events)}"
    unfenced = writes_without_the_lease(outcome.events, everything)
    assert unfenced == [], f"{what}: writes without the Lease:\n" + "\n".join(unfenced[:10])
    for replica in fleet.replicas:
        assert "Traceback" not in replica.log(), f"{what}: {replica.name} logged a traceback:\n{log_tail(replica.process)}"


# --- fixtures ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chaos_plane(e2e_tools: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(e2e_tools, tmp_path_factory.mktemp("chaos-plane")) as plane:
        yield plane


@pytest.fixture(scope="module")
def fleet(chaos_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    fleet = Fleet(chaos_plane, tmp_path_factory.mktemp("chaos-replicas"))
    fleet.set_up()
    try:
        yield fleet
    finally:
        fleet.stop_all()


BASELINE: dict[str, float] = {}


@pytest.fixture
def leader(fleet: Fleet) -> Iterator[Replica]:
    """One replica, leading before the rollout starts; stopped (SIGTERM) after the scenario if still running."""
    replica = fleet.start("leader")
    wait_until(lambda: fleet.leads(replica), timeout=60, what="the replica to lead")
    yield replica
    if replica.process.poll() is None:
        assert fleet.stop(replica) == 0


@pytest.fixture
def standby(fleet: Fleet, leader: Replica) -> Iterator[Replica]:
    replica = fleet.start("standby")
    wait_until(lambda: any(e.get("userAgent") == replica.agent for e in fleet.plane.audit_events(ACCOUNT)),
               timeout=60, what="the standby to ask for the Lease")
    yield replica
    if replica.process.poll() is None:
        assert fleet.stop(replica) == 0


# --- the scenarios ------------------------------------------------------------------------------------------------


def test_undisturbed(fleet: Fleet, leader: Replica) -> None:
    outcome = fleet.rollout()
    check(fleet, outcome, "undisturbed")
    BASELINE["seconds"] = outcome.seconds
    note(f"controller chaos: undisturbed rollout of {NODES} KWOK nodes at maxParallelUpgrades {PARALLEL}: "
         f"{outcome.seconds:.1f} s, at most {outcome.max_in_progress} in progress")


def _baseline() -> str:
    return f" (undisturbed: {BASELINE['seconds']:.1f} s)" if "seconds" in BASELINE else ""


def test_api_server_killed_and_started_again(fleet: Fleet, leader: Replica) -> None:
    def kill_the_api_server(fleet: Fleet) -> None:
        fleet.wait_progress(PARALLEL)
        fleet.plane.kill("kube-apiserver")
        time.sleep(10)
        fleet.plane.start_again("kube-apiserver")
        fleet.plane.wait_ready()

    outcome = fleet.rollout(kill_the_api_server)
    check(fleet, outcome, "API server restart")
    assert leader.process.poll() is None, f"the controller exited:\n{log_tail(leader.process)}"
    note(f"controller chaos: kube-apiserver SIGKILLed mid-rollout and started 10 s later: done in "
         f"{outcome.seconds:.1f} s{_baseline()}, the controller rode it out")


def test_etcd_frozen(fleet: Fleet, leader: Replica) -> None:
    def freeze_etcd(fleet: Fleet) -> None:
        fleet.wait_progress(PARALLEL)
        fleet.plane.signal("etcd", signal.SIGSTOP)
        time.sleep(20)
        fleet.plane.signal("etcd", signal.SIGCONT)

    outcome = fleet.rollout(freeze_etcd)
    check(fleet, outcome, "etcd frozen")
    assert leader.process.poll() is None, f"the controller exited:\n{log_tail(leader.process)}"
    note(f"controller chaos: etcd frozen 20 s mid-rollout: done in {outcome.seconds:.1f} s{_baseline()}, no exit")


def test_leader_killed_with_a_standby(fleet: Fleet, leader: Replica, standby: Replica) -> None:
    def kill_the_leader(fleet: Fleet) -> None:
        fleet.wait_progress(PARALLEL)
        os.killpg(leader.process.pid, signal.SIGKILL)
        leader.process.wait()

    outcome = fleet.rollout(kill_the_leader)
    check(fleet, outcome, "leader killed")
    assert fleet.holder() == standby.identity
    note(f"controller chaos: leader SIGKILLed mid-rollout, the standby finished it: {outcome.seconds:.1f} s"
         f"{_baseline()}")


def test_two_replicas_all_along(fleet: Fleet, leader: Replica, standby: Replica) -> None:
    outcome = fleet.rollout()
    check(fleet, outcome, "two replicas")
    standby_writes = [e for e in outcome.events if e.get("userAgent") == standby.agent and e["verb"] in WRITES
                      and not _is_lease(e)]
    assert standby_writes == []
    note(f"controller chaos: two replicas all along: {outcome.seconds:.1f} s, the standby wrote nothing")


def test_leader_frozen_while_the_standby_takes_over(fleet: Fleet, leader: Replica, standby: Replica) -> None:
    """SIGSTOP, as a long pause or a stalled node would: the standby takes over, and the old leader, thawed with
    its stale view, writes nothing (its fence is closed) and exits 1 once it sees the other holder."""
    def freeze_the_leader(fleet: Fleet) -> None:
        fleet.wait_progress(PARALLEL)
        os.killpg(leader.process.pid, signal.SIGSTOP)
        wait_until(lambda: fleet.leads(standby), timeout=60, what="the standby to take over")
        fleet.wait_progress(NODES // 2)  # the standby has admitted nodes of its own
        os.killpg(leader.process.pid, signal.SIGCONT)

    outcome = fleet.rollout(freeze_the_leader)
    check(fleet, outcome, "leader frozen")
    wait_until(lambda: leader.process.poll() is not None, timeout=30, what="the thawed leader to exit")
    assert leader.process.returncode == 1, log_tail(leader.process)
    assert "lost the Lease" in leader.log()
    note(f"controller chaos: leader frozen mid-rollout, the standby took over; the thawed leader wrote nothing and "
         f"exited 1; {outcome.seconds:.1f} s{_baseline()}, at most {outcome.max_in_progress} in progress")


def test_sigterm_releases_the_lease_at_once(fleet: Fleet, leader: Replica, standby: Replica) -> None:
    exited: list[float] = []

    def terminate_the_leader(fleet: Fleet) -> None:
        fleet.wait_progress(PARALLEL)
        assert fleet.stop(leader) == 0
        exited.append(time.monotonic())
        wait_until(lambda: fleet.leads(standby), timeout=15, what="the standby to take over", interval=0.1)
        exited.append(time.monotonic())

    outcome = fleet.rollout(terminate_the_leader)
    check(fleet, outcome, "SIGTERM")
    assert leader.exit_seconds is not None and leader.exit_seconds < 5.0, f"SIGTERM took {leader.exit_seconds} s"
    assert "released the Lease" in leader.log()
    note(f"controller chaos: SIGTERM of the leader mid-rollout: exited 0 in {leader.exit_seconds:.2f} s, the standby "
         f"led {exited[1] - exited[0]:.1f} s later (lease duration 15 s); rollout {outcome.seconds:.1f} s")


def test_overloaded_api_server(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> None:
    """kube-apiserver restarted with low max-in-flight limits (priority and fairness off, as on this plane), and
    load clients holding the budget with the controller's own ServiceAccount: the controller's requests get 429
    (plain text, `Retry-After: 1`), and the rollout still finishes."""
    plane = fleet.plane
    argv = plane.process("kube-apiserver").argv
    plane.kill("kube-apiserver")
    plane.process("kube-apiserver").argv = (*argv, "--max-requests-inflight=3", "--max-mutating-requests-inflight=2")
    plane.start_again("kube-apiserver")
    plane.wait_ready()
    load = _Load(plane, service_account_token(fleet.admin, NAMESPACE, "gpu-operator"), clients=8)
    load.start()
    replica = fleet.start("overloaded")
    try:
        wait_until(lambda: fleet.leads(replica), timeout=120, what="the replica to lead under load")
        outcome = fleet.rollout()
        check(fleet, outcome, "overload")
        throttled = sum(1 for e in outcome.events if e.get("userAgent") == replica.agent
                        and e.get("responseStatus", {}).get("code") == 429)
        assert throttled > 0, "the overload did not throttle the controller: the scenario tested nothing"
        assert replica.process.poll() is None, log_tail(replica.process)
        note(f"controller chaos: API server overloaded (max-in-flight 3/2, {load.clients} load clients, "
             f"{load.throttled} of their {load.sent} requests and {throttled} of the controller's answered 429): "
             f"rollout done in {outcome.seconds:.1f} s{_baseline()}")
    finally:
        load.stop.set()
        load.join()
        if replica.process.poll() is None:
            assert fleet.stop(replica) == 0
        plane.kill("kube-apiserver")
        plane.process("kube-apiserver").argv = argv
        plane.start_again("kube-apiserver")
        plane.wait_ready()


class _Load(threading.Thread):
    """Clients listing every pod in a loop, as the controller's ServiceAccount (so the same limits apply)."""

    def __init__(self, plane: ControlPlane, token: str, clients: int) -> None:
        super().__init__(daemon=True)
        self.plane, self.token, self.clients = plane, token, clients
        self.stop = threading.Event()
        self.sent = self.throttled = 0
        self._lock = threading.Lock()

    def _client(self) -> None:
        import ssl
        context = ssl.create_default_context(cafile=str(self.plane.ca_file))
        request = urllib.request.Request(f"{self.plane.server}/api/v1/pods", headers={
            "Authorization": f"Bearer {self.token}", "User-Agent": LOAD_AGENT})
        while not self.stop.is_set():
            code = 200
            try:
                with urllib.request.urlopen(request, context=context, timeout=10) as response:
                    response.read()
            except urllib.error.HTTPError as error:
                code = error.code
            except OSError:
                code = 0
            with self._lock:
                self.sent += 1
                self.throttled += code == 429
            self.stop.wait(0.05)

    def run(self) -> None:
        threads = [threading.Thread(target=self._client, daemon=True) for _ in range(self.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def test_audit_reading_finds_an_unfenced_write() -> None:
    """The invariant itself catches what it is for: a write by a replica after another took the Lease."""
    def event(at: str, agent: str, verb: str, resource: str, name: str = "n", code: int = 200) -> Object:
        return {"requestReceivedTimestamp": at, "userAgent": f"gpu-operator-controller ({agent})", "verb": verb,
                "objectRef": {"resource": resource, "name": LEASE_NAME if resource == "leases" else name},
                "responseStatus": {"code": code}}

    events = [event("2026-01-01T00:00:00.000000Z", "a", "update", "leases"),
              event("2026-01-01T00:00:01.000000Z", "a", "patch", "nodes"),
              event("2026-01-01T00:00:20.000000Z", "b", "update", "leases"),
              event("2026-01-01T00:00:20.500000Z", "b", "update", "leases", code=409),
              event("2026-01-01T00:00:21.000000Z", "a", "patch", "nodes", name="late"),
              event("2026-01-01T00:00:22.000000Z", "b", "patch", "nodes")]
    found = writes_without_the_lease(events, events)
    assert len(found) == 1 and "(a) patch nodes/late while gpu-operator-controller (b) held the Lease" in found[0]
    evictions = [{"verb": "create", "objectRef": {"subresource": "eviction", "namespace": "d", "name": "p"},
                  "responseStatus": {"code": 201}}] * 2
    assert evicted_twice(evictions) == ["d/p"]
