"""The breakers and the concurrency cap, as one budget a plan spends node by node.

A breaker counts the nodes that are quarantined *now* (their state label is one of
:data:`~gpu_operator.remediation.vocabulary.QUARANTINED`, `needs-human` included: they are out of service all the
same), in the cluster and in each pool that has a breaker of its own. While a breaker holds (the count has reached
its limit: `maxNodes`, or `maxPercent` of the nodes rounded up, whichever is smaller), a new quarantine is
deferred, and the Event names the breaker. Nothing else stops: nodes already quarantined go on, validate and are
uncordoned. Nothing resets it: as soon as the count is under the limit again, the next deferred node is
quarantined. NVSentinel's breaker, by contrast, counts cordons in a time window, trips at 50% of the GPU nodes,
then blocks everything (uncordons too) until a person edits a ConfigMap and restarts the module.

`maxConcurrent` counts the nodes past quarantine (:data:`~gpu_operator.remediation.vocabulary.REMEDIATING`):
a quarantined node waits for a slot before it is drained, reset, rebooted or validated. Quarantine itself is never
capped by it: taking every broken node out of scheduling at once is the point (100 faults are cordoned in one
round), and the breakers bound how many that may be.

The counts start from the nodes' states before the plan, and only grow as the plan admits nodes (in the order of
their fault's age, then name): a node released in this plan frees its place at the next plan, so the limits hold
at every moment, whatever order the actuator writes in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from gpu_operator.remediation.policy import Breaker, RemediationPolicy
from gpu_operator.remediation.vocabulary import QUARANTINED, REMEDIATING, State

__all__ = ["BreakerStatus", "Budget"]


@dataclass(frozen=True)
class BreakerStatus:
    """One breaker after the plan: how many nodes are quarantined under it, its limit, and whether it holds."""

    pool: str
    """"" for the cluster's breaker."""
    quarantined: int
    limit: int | None
    deferred: int

    @property
    def holding(self) -> bool:
        return self.limit is not None and self.quarantined >= self.limit

    @property
    def name(self) -> str:
        return f"the breaker of pool {self.pool}" if self.pool else "the cluster's breaker"

    def describe(self) -> str:
        return f"{self.name} holds ({self.quarantined} of {self.limit} nodes quarantined)"


class Budget:
    """What the plan may still start: quarantines under the breakers, slots under maxConcurrent."""

    def __init__(self, policy: RemediationPolicy, nodes: Iterable[tuple[str, State]]) -> None:
        listed = list(nodes)
        self._policy = policy
        self._total = Counter(pool for pool, _ in listed)
        self._quarantined = Counter(pool for pool, state in listed if state in QUARANTINED)
        self._remediating = sum(state in REMEDIATING for _, state in listed)
        self._deferred: Counter[str] = Counter()

    def _breakers(self, pool: str) -> list[tuple[str, Breaker]]:
        own = self._policy.pool_breaker(pool)
        return [("", self._policy.breaker)] + ([(pool, own)] if own is not None else [])

    def _count(self, scope: str) -> int:
        return sum(self._quarantined.values()) if scope == "" else self._quarantined[scope]

    def _limit(self, scope: str, breaker: Breaker) -> int | None:
        return breaker.limit(sum(self._total.values()) if scope == "" else self._total[scope])

    def quarantine(self, pool: str, spend: bool = True) -> BreakerStatus | None:
        """Admit a new quarantine in `pool` (None), or the breaker that holds it back."""
        for scope, breaker in self._breakers(pool):
            limit = self._limit(scope, breaker)
            if limit is not None and self._count(scope) >= limit:
                if spend:
                    self._deferred[scope] += 1
                return BreakerStatus(scope, self._count(scope), limit, self._deferred[scope])
        if spend:
            self._quarantined[pool] += 1
        return None

    def slot(self, spend: bool = True) -> bool:
        """Take a remediation slot; False when maxConcurrent nodes are past quarantine already."""
        if self._remediating >= self._policy.max_concurrent:
            return False
        self._remediating += spend
        return True

    def statuses(self) -> tuple[BreakerStatus, ...]:
        scopes = [("", self._policy.breaker)] + [
            (pool, breaker) for pool in sorted(self._total) if pool
            for breaker in [self._policy.pool_breaker(pool)] if breaker is not None]
        return tuple(BreakerStatus(scope, self._count(scope), self._limit(scope, breaker), self._deferred[scope])
                     for scope, breaker in scopes if breaker.enabled)
