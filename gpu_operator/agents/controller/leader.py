"""Leader election through a `coordination.k8s.io/v1` Lease: one active controller, the others standing by, and
a fence that keeps a replica which may have lost the Lease from writing.

The protocol is client-go's (tools/leaderelection/leaderelection.go `tryAcquireOrRenew`, `renew`, `release`):

* a candidate takes the Lease when nobody holds it, or when the record it observes has not changed for
  `leaseDurationSeconds` *by its own clock* (the time it first saw that record, not the holder's `renewTime`, so
  clock skew between machines does not matter), with a replace carrying the resourceVersion it read: of two
  candidates only one wins (409 Conflict for the other);
* the holder renews every `retry` seconds (replacing the Lease it wrote last, without reading it first, unless
  that fails with 409) and leads only while its last successful renewal *began* less than
  `renew_deadline` ago; `renew_deadline` is shorter than the lease duration, so the holder stops acting before
  any other replica may take over, with the difference as margin for a write already on its way;
* on shutdown the holder releases the Lease (empty holder, duration 1 s), so a standby takes over at once.

The fence is :meth:`LeaderElector.guard`, which the API client runs before every attempt of every write (see
:mod:`gpu_operator.agents.kube.transport`): outside the renew deadline nothing is sent. A renewal that is only
overdue (the API server restarting, etcd stalled, this process frozen) does not end the leadership by itself:
when a renewal succeeds again and the Lease still shows this replica with the same `leaseTransitions`, nobody
else held it meanwhile, and the fence opens again. If anyone else took it, the Lease is lost for good (`lost`
is set; the controller exits and its pod restarts as a candidate). The Lease is named as NVIDIA's operator names
its own (`53822513.nvidia.com`), so ours and NVIDIA's never lead in one namespace at once.
"""

from __future__ import annotations

import datetime
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx2
from lightkube import Client
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease

from gpu_operator.agents.kube.errors import Conflict, KubeError, NotFound, NotLeader, kube_error
from gpu_operator.agents.kube.transport import READ_METHODS

__all__ = ["LEASE_NAME", "LeaderElector"]

LEASE_NAME = "53822513.nvidia.com"
_LOG = logging.getLogger(__name__)


def _wall() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


@dataclass(frozen=True)
class _Record:
    holder: str
    renewed: str
    transitions: int
    version: str


def _record(lease: Lease) -> _Record:
    spec = lease.spec or LeaseSpec()
    renewed = spec.renewTime or spec.acquireTime
    return _Record(spec.holderIdentity or "", str(renewed or ""), int(spec.leaseTransitions or 0),
                   str(lease.metadata.resourceVersion or "") if lease.metadata else "")


class LeaderElector:
    """Acquire, renew and release a Lease in `namespace` as `identity`; `guard` fences the writes of the others."""

    def __init__(self, client: Client, namespace: str, identity: str, *, name: str = LEASE_NAME,
                 lease_seconds: float = 15, renew_deadline: float = 10.0, retry: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not retry < renew_deadline < lease_seconds:
            raise ValueError("leader election needs retry < renew deadline < lease duration")
        self._client, self._namespace, self.identity, self._name = client, namespace, identity, name
        self._lease_seconds = max(1, math.ceil(lease_seconds))  # the Lease holds whole seconds
        self._renew_deadline, self._retry, self._clock = renew_deadline, retry, clock
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._renewed_at: float | None = None
        """Monotonic time at which the last successful acquire or renewal began."""
        self._transitions = -1
        """`leaseTransitions` when this replica took the Lease: unchanged while nobody else held it."""
        self._written: Lease | None = None
        """The Lease as this replica last wrote it (the server's answer, with its resourceVersion)."""
        self._observed: _Record | None = None
        self._observed_at = 0.0
        self._lease_path = f"/namespaces/{namespace}/leases/{name}"

    # --- the fence ---------------------------------------------------------------------------------------------

    def leading(self) -> bool:
        """True while this replica may write: it holds the Lease and renewed it within the renew deadline."""
        renewed = self._renewed_at
        return not self.lost.is_set() and renewed is not None and self._clock() - renewed < self._renew_deadline

    def guard(self, request: httpx2.Request) -> None:
        """Refuse a write (raise NotLeader) unless this replica leads; reads and the Lease's own requests pass."""
        if request.method in READ_METHODS or request.url.path.endswith(self._lease_path):
            return
        if not self.leading():
            raise NotLeader(f"not writing {request.method} {request.url.path}: this replica does not hold the Lease "
                            f"{self._namespace}/{self._name} within its renew deadline")

    # --- one attempt ------------------------------------------------------------------------------------------

    def _spec(self, acquired: datetime.datetime | None, transitions: int, seconds: int | None = None,
              holder: str | None = None) -> LeaseSpec:
        now = _wall()
        return LeaseSpec(holderIdentity=self.identity if holder is None else holder or None,
                         leaseDurationSeconds=seconds or self._lease_seconds, acquireTime=acquired or now,
                         renewTime=now, leaseTransitions=transitions)

    def _read(self) -> Lease | None:
        try:
            return self._client.get(Lease, self._name, namespace=self._namespace)
        except (httpx2.HTTPError, KubeError) as error:
            failure = kube_error(error) if isinstance(error, httpx2.HTTPError) else error
            if isinstance(failure, NotFound):
                return None
            raise failure from error

    def _write(self, lease: Lease, create: bool) -> bool:
        try:
            self._written = (self._client.create if create else self._client.replace)(lease)
        except httpx2.HTTPError as error:
            failure = kube_error(error)
            if isinstance(failure, Conflict):
                self._written = None
                return False  # another candidate wrote first
            raise failure from error
        return True

    def _renew_as_written(self, began: float) -> bool | None:
        """client-go's fast path: the leader replaces the Lease it wrote last without reading it first (one request
        instead of two, which counts when the API server throttles); None when it must read (it has no copy, or
        the Lease changed since: 409)."""
        if self._written is None or not self.leading():
            return None
        lease = self._written
        lease.spec = self._spec(lease.spec.acquireTime if lease.spec else None, self._transitions)
        try:
            written = self._write(lease, create=False)
        except NotFound:
            written = False  # deleted: the reading path says what that means
        except KubeError:
            self._written = None
            raise
        return self._won(began, self._transitions) if written else None

    def _observe(self, record: _Record, now: float) -> None:
        if record != self._observed:
            self._observed, self._observed_at = record, now

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this replica holds the Lease afterwards. Sets `lost` when it held the Lease and
        someone else has taken it since."""
        began = self._clock()
        fast = self._renew_as_written(began)
        if fast is not None:
            return fast
        lease = self._read()
        if lease is None:
            if self._transitions >= 0:
                self._lose("the Lease was deleted")
                return False
            fresh = Lease(metadata=ObjectMeta(name=self._name, namespace=self._namespace), spec=self._spec(None, 0))
            return self._won(began, 0) if self._write(fresh, create=True) else False
        record = _record(lease)
        self._observe(record, began)
        mine = record.holder == self.identity
        if self._transitions >= 0 and not (mine and record.transitions == self._transitions):
            self._lose(f"the Lease is now held by {record.holder or 'nobody'} (transitions {record.transitions})")
            return False
        duration = (lease.spec.leaseDurationSeconds if lease.spec else None) or self._lease_seconds
        if not mine and record.holder and began - self._observed_at <= duration:
            return False  # held by another replica, renewed within its duration as far as we have seen
        transitions = record.transitions if mine else record.transitions + 1
        lease.spec = self._spec((lease.spec.acquireTime if lease.spec else None) if mine else None, transitions)
        if not self._write(lease, create=False):
            return False
        return self._won(began, transitions)

    def _won(self, began: float, transitions: int) -> bool:
        if self._transitions < 0:
            _LOG.info("became the leader (Lease %s/%s)", self._namespace, self._name)
        elif not self.leading():
            _LOG.info("renewed the Lease %s/%s again; nobody held it meanwhile: resuming", self._namespace,
                      self._name)
        self._transitions, self._renewed_at = transitions, began
        return True

    def _lose(self, why: str) -> None:
        if not self.lost.is_set():
            _LOG.error("lost the Lease %s/%s: %s; stopping", self._namespace, self._name, why)
        self._renewed_at = None
        self.lost.set()

    # --- the loops ------------------------------------------------------------------------------------------

    def acquire(self) -> bool:
        """Block until this replica leads (True) or `stop()` was called (False)."""
        while not self._stop.is_set():
            try:
                if self.try_acquire_or_renew():
                    return True
            except KubeError as error:  # the API is unreachable or refuses: keep trying, as a candidate does
                _LOG.warning("leader election: %s", error)
            self._stop.wait(self._retry)
        return False

    def renew_in_background(self) -> threading.Thread:
        """Keep renewing every `retry` seconds until `stop()` or the Lease is lost."""
        thread = threading.Thread(target=self._renew, name="lease-renewal", daemon=True)
        thread.start()
        return thread

    def _renew(self) -> None:
        overdue = False
        while not self._stop.wait(self._retry) and not self.lost.is_set():
            try:
                self.try_acquire_or_renew()
            except KubeError as error:
                _LOG.warning("renewing the Lease %s/%s: %s", self._namespace, self._name, error)
            if not self.leading() and not self.lost.is_set() and not overdue:
                _LOG.warning("the Lease %s/%s was not renewed within %.0f s: writing nothing until it is",
                             self._namespace, self._name, self._renew_deadline)
            overdue = not self.leading()

    def stop(self) -> None:
        """Stop acquiring and renewing (the fence closes at the renew deadline, or at `release`)."""
        self._stop.set()

    def release(self) -> bool:
        """Give the Lease up (client-go's ReleaseOnCancel) so that a standby takes over at once; True if done.
        Call it only once this replica has stopped writing."""
        if not self.leading():
            return False
        self._renewed_at = None  # nothing more is written from here on
        try:
            lease = self._read()
            if lease is None or _record(lease).holder != self.identity:
                return False
            lease.spec = self._spec(None, _record(lease).transitions, seconds=1, holder="")
            released = self._write(lease, create=False)
        except KubeError as error:
            _LOG.warning("could not release the Lease %s/%s: %s", self._namespace, self._name, error)
            return False
        if released:
            _LOG.info("released the Lease %s/%s", self._namespace, self._name)
        return released
