"""Leader election through a `coordination.k8s.io/v1` Lease: one active controller, the others standing by.

The same protocol as client-go's leader election: the holder renews `renewTime` every `retry` seconds; a
candidate takes the Lease over once `renewTime + leaseDurationSeconds` has passed, with a replace that carries
the resourceVersion it read, so two candidates cannot both win (the loser gets 409 Conflict). A holder that cannot
renew within `renew_deadline` stops leading; the controller then exits and its pod restarts as a candidate. The
Lease is named as NVIDIA's operator names its own (`53822513.nvidia.com`), so ours and NVIDIA's never lead in
one namespace at once.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time

from lightkube import ApiError, Client
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease

__all__ = ["LEASE_NAME", "LeaderElector"]

LEASE_NAME = "53822513.nvidia.com"
_LOG = logging.getLogger(__name__)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class LeaderElector:
    """Acquire, then keep renewing, a Lease in `namespace` as `identity`."""

    def __init__(self, client: Client, namespace: str, identity: str, *, name: str = LEASE_NAME,
                 lease_seconds: int = 15, renew_deadline: float = 10.0, retry: float = 2.0) -> None:
        self._client, self._namespace, self.identity, self._name = client, namespace, identity, name
        self._lease_seconds, self._renew_deadline, self._retry = lease_seconds, renew_deadline, retry
        self.lost = threading.Event()
        self._stop = threading.Event()

    def _spec(self, acquired: datetime.datetime | None, transitions: int) -> LeaseSpec:
        now = _now()
        return LeaseSpec(holderIdentity=self.identity, leaseDurationSeconds=self._lease_seconds,
                         acquireTime=acquired or now, renewTime=now, leaseTransitions=transitions)

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this candidate holds the Lease afterwards."""
        try:
            lease = self._client.get(Lease, self._name, namespace=self._namespace)
        except ApiError as error:
            if error.status.code != 404:
                raise
            lease = Lease(metadata=ObjectMeta(name=self._name, namespace=self._namespace), spec=self._spec(None, 0))
            try:
                self._client.create(lease)
                return True
            except ApiError as conflict:
                if conflict.status.code == 409:
                    return False
                raise
        spec = lease.spec or LeaseSpec()
        mine = spec.holderIdentity == self.identity
        renewed = spec.renewTime or spec.acquireTime
        duration = spec.leaseDurationSeconds or self._lease_seconds
        expired = renewed is None or (_now() - renewed).total_seconds() > duration
        if not mine and spec.holderIdentity and not expired:
            return False
        transitions = (spec.leaseTransitions or 0) + (0 if mine else 1)
        lease.spec = self._spec(spec.acquireTime if mine else None, transitions)
        try:
            self._client.replace(lease)
        except ApiError as error:
            if error.status.code == 409:
                return False
            raise
        if not mine:
            _LOG.info("became the leader (Lease %s/%s)", self._namespace, self._name)
        return True

    def acquire(self) -> None:
        """Block until this candidate leads, then keep renewing in the background."""
        while not self._stop.is_set():
            try:
                if self.try_acquire_or_renew():
                    break
            except Exception as error:  # the API is unreachable: keep trying, as a candidate does
                _LOG.warning("leader election: %s", error)
            self._stop.wait(self._retry)
        threading.Thread(target=self._renew, name="lease-renewal", daemon=True).start()

    def _renew(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self._retry):
            try:
                if self.try_acquire_or_renew():
                    last = time.monotonic()
                    continue
            except Exception as error:
                _LOG.warning("lease renewal failed: %s", error)
            if time.monotonic() - last > self._renew_deadline:
                _LOG.error("lost the Lease %s/%s; stopping", self._namespace, self._name)
                self.lost.set()
                return
            if not self._still_mine():
                self.lost.set()
                return

    def _still_mine(self) -> bool:
        try:
            lease = self._client.get(Lease, self._name, namespace=self._namespace)
        except Exception:
            return True  # unknown: the renew deadline decides
        return bool(lease.spec and lease.spec.holderIdentity == self.identity)

    def stop(self) -> None:
        self._stop.set()
