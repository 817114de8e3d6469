"""Leader election and its fence, against the fake API server through the agents' real client.

client-go's tools/leaderelection/leaderelection.go is the reference: `tryAcquireOrRenew` (a record is expired
`LeaseDuration` after this candidate first observed it, by its own clock; the replace carries the
resourceVersion read, so one of two candidates wins), `renew` (the holder stops leading once a renewal is
`RenewDeadline` late) and `release` (empty holder, duration 1 s: a standby takes over at once). Our addition,
the fence: every write is checked against the renew deadline before it is sent, and a holder whose renewal was
only late resumes when the Lease shows nobody else held it meanwhile (same holder, same `leaseTransitions`).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
from lightkube import Client

from gpu_operator.agents.controller.leader import LEASE_NAME, LeaderElector
from gpu_operator.agents.kube import NotLeader, RetryPolicy, connect
from tests.agents.kube.fake_apiserver import FakeApiServer

NS = "gpu-operator"
LEASE_PATH = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{LEASE_NAME}"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        yield running


def _client(server: FakeApiServer) -> Client:
    return connect(server.client().config, retry=RetryPolicy(attempts=2, initial_delay=0.001))


def _elector(server: FakeApiServer, identity: str, clock: Clock) -> LeaderElector:
    return LeaderElector(_client(server), NS, identity, clock=clock)


def _write(path: str = "/api/v1/nodes/gpu-0") -> httpx2.Request:
    return httpx2.Request("PATCH", f"https://api{path}")


def _lease(server: FakeApiServer) -> dict:
    lease = server.get("leases", LEASE_NAME, NS, group="coordination.k8s.io")
    assert lease is not None
    return lease


def test_one_candidate_wins_and_the_other_waits_a_full_duration_by_its_own_clock(server: FakeApiServer) -> None:
    clock = Clock()
    a, b = _elector(server, "a", clock), _elector(server, "b", clock)
    assert a.try_acquire_or_renew() and a.leading()
    assert not b.try_acquire_or_renew() and not b.leading()
    clock.now += 14.0  # a stopped renewing (frozen, killed): b counts from the record it first saw
    assert not b.try_acquire_or_renew()
    clock.now += 2.0
    assert b.try_acquire_or_renew() and b.leading()
    assert _lease(server)["spec"]["holderIdentity"] == "b" and _lease(server)["spec"]["leaseTransitions"] == 1


def test_a_late_candidate_does_not_trust_an_old_renew_time(server: FakeApiServer) -> None:
    """The holder's renewTime is another machine's clock: a candidate that starts now waits a whole lease duration
    from its own first sight of the record, however old renewTime looks."""
    clock = Clock()
    assert _elector(server, "a", clock).try_acquire_or_renew()
    lease = _lease(server)
    lease["spec"]["renewTime"] = "2020-01-01T00:00:00.000000Z"
    server.update("leases", LEASE_NAME, NS, lambda obj: obj.update(spec=lease["spec"]), group="coordination.k8s.io")
    late = _elector(server, "late", clock)
    assert not late.try_acquire_or_renew()
    clock.now += 15.5
    assert late.try_acquire_or_renew()


def test_the_fence_closes_at_the_renew_deadline_and_lets_the_lease_through(server: FakeApiServer) -> None:
    clock = Clock()
    a = _elector(server, "a", clock)
    assert a.try_acquire_or_renew()
    a.guard(_write())  # leading: the write may go
    clock.now += 9.9
    a.guard(_write())
    clock.now += 0.2  # 10.1 s since the last renewal began: past the renew deadline, before the lease duration
    assert not a.leading()
    with pytest.raises(NotLeader, match="PATCH /api/v1/nodes/gpu-0: this replica does not hold the Lease"):
        a.guard(_write())
    a.guard(_write(LEASE_PATH))  # the renewal itself is never fenced
    a.guard(httpx2.Request("GET", "https://api/api/v1/nodes"))  # reads never


def test_a_late_renewal_resumes_when_nobody_held_the_lease_meanwhile(server: FakeApiServer) -> None:
    """An API server restart or an etcd stall: the renewal is late, nothing is written meanwhile, and once the
    Lease is renewed with the same holder and transitions the work goes on, without an exit."""
    clock = Clock()
    a = _elector(server, "a", clock)
    assert a.try_acquire_or_renew()
    server.fail("*", "/leases/", 503, times=100)
    clock.now += 12.0
    with pytest.raises(Exception):
        a.try_acquire_or_renew()
    assert not a.leading() and not a.lost.is_set()
    server._faults.clear()
    assert a.try_acquire_or_renew() and a.leading() and not a.lost.is_set()


def test_a_holder_that_was_frozen_while_another_took_over_loses_for_good(server: FakeApiServer) -> None:
    """SIGSTOP of the leader with a standby running: on resuming, its first renewal finds the other holder; it is
    lost (the controller exits) and, before that, nothing it would write passes the fence."""
    clock = Clock()
    a, b = _elector(server, "a", clock), _elector(server, "b", clock)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    clock.now += 20.0  # a frozen past the lease duration
    assert b.try_acquire_or_renew()
    with pytest.raises(NotLeader):
        a.guard(_write())  # a resumes mid-round: its next write is refused before it is sent
    assert not a.try_acquire_or_renew()
    assert a.lost.is_set() and not a.leading()
    assert _lease(server)["spec"]["holderIdentity"] == "b"


def test_the_same_holder_with_other_transitions_is_not_continuity(server: FakeApiServer) -> None:
    clock = Clock()
    a = _elector(server, "a", clock)
    assert a.try_acquire_or_renew()
    lease = _lease(server)
    lease["spec"]["leaseTransitions"] = 7  # someone held it and gave it back under our name: not ours any more
    server.update("leases", LEASE_NAME, NS, lambda obj: obj.update(spec=lease["spec"]), group="coordination.k8s.io")
    assert not a.try_acquire_or_renew() and a.lost.is_set()


def test_a_deleted_lease_is_lost(server: FakeApiServer) -> None:
    clock = Clock()
    a = _elector(server, "a", clock)
    assert a.try_acquire_or_renew()
    server.remove("leases", LEASE_NAME, NS, group="coordination.k8s.io")
    assert not a.try_acquire_or_renew() and a.lost.is_set()


def test_release_hands_over_at_once(server: FakeApiServer) -> None:
    clock = Clock()
    a, b = _elector(server, "a", clock), _elector(server, "b", clock)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.release() and not a.leading()
    spec = _lease(server)["spec"]
    assert "holderIdentity" not in spec and spec["leaseDurationSeconds"] == 1
    assert b.try_acquire_or_renew()  # no wait for the lease duration
    assert not a.release()  # not the holder: nothing to release


def test_two_candidates_racing_for_a_free_lease_one_wins(server: FakeApiServer) -> None:
    clock = Clock()
    a, b = _elector(server, "a", clock), _elector(server, "b", clock)
    assert a.try_acquire_or_renew()
    assert a.release()
    stale = _lease(server)
    assert b.try_acquire_or_renew()
    # a replace from a candidate that read the released lease before b took it: 409, a does not win
    server.update("leases", LEASE_NAME, NS, lambda obj: None, group="coordination.k8s.io")
    assert _lease(server)["metadata"]["resourceVersion"] != stale["metadata"]["resourceVersion"]
    assert not a.try_acquire_or_renew()


def test_the_timings_keep_client_gos_order() -> None:
    with pytest.raises(ValueError, match="retry < renew deadline < lease duration"):
        LeaderElector(None, NS, "a", lease_seconds=10, renew_deadline=10.0)  # type: ignore[arg-type]


def test_the_leader_renews_with_one_request_and_reads_only_after_a_conflict(server: FakeApiServer) -> None:
    """client-go's fast path (tryAcquireOrRenew: "fast path for the leader to update optimistically assuming that
    the record observed last time is the current version"): one PUT per renewal while nothing else wrote the
    Lease; after someone did, the 409 sends it back to a read, which finds what happened."""
    clock = Clock()
    a = _elector(server, "a", clock)
    assert a.try_acquire_or_renew()
    before = len(server.requests)
    clock.now += 2
    assert a.try_acquire_or_renew()
    assert [r.method for r in server.requests[before:]] == ["PUT"]
    server.update("leases", LEASE_NAME, NS, lambda obj: None, group="coordination.k8s.io")  # a new version
    before = len(server.requests)
    clock.now += 2
    assert a.try_acquire_or_renew()  # still ours by holder and transitions: the read confirms, the write renews
    assert [r.method for r in server.requests[before:]] == ["PUT", "GET", "PUT"]
