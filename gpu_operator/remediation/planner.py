"""The planner: every GPU node's facts, the policy and the time in; one step per node, and what to report, out.

`plan(nodes, policy, now)` is pure: the same nodes at the same time give the same plan, and the nodes after
its patches give the next step, never the one before (:mod:`gpu_operator.remediation.steps` says why). The
controller passes every GPU node it knows (the breakers' percentages are of them, per pool and in all), applies
each node's patch and then its actions (:mod:`gpu_operator.remediation.actions`), emits the Events, feeds the
metrics, and plans again on the next Node event or after `requeue_after` seconds.

Nodes are stepped in the order of their fault's age (then name), so when a breaker or `maxConcurrent` admits only
some, the oldest fault goes first, and a restarted leader admits the same ones.

A node whose rule, or pool, is in `dry-run` is planned like the others but gets no patch and no action: its plan
says what would be done (`would`), and its Events say it with the reason `GPURemediationDryRun`. It spends no
breaker or slot: it is judged against what the enforced nodes left.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gpu_operator.remediation.actions import (
    CloudRequest,
    DrainPods,
    LocalRequest,
    NodePatch,
    PlannedEvent,
    RestartValidator,
)
from gpu_operator.remediation.encoding import parse_stage
from gpu_operator.remediation.guardrails import BreakerStatus, Budget
from gpu_operator.remediation.node import NodeView
from gpu_operator.remediation.policy import RemediationPolicy
from gpu_operator.remediation.reading import NodeContext, read_node
from gpu_operator.remediation.steps import Outcome, step
from gpu_operator.remediation.vocabulary import QUARANTINED, STAGE_ANNOTATION, State

__all__ = ["DRY_RUN_REASON", "NodePlan", "NodeStep", "PlanMetrics", "RemediationPlan", "plan"]

DRY_RUN_REASON = "GPURemediationDryRun"


@dataclass(frozen=True)
class NodeStep:
    """Where a node stands, for `gpu-operator diag` and the logs: its state, fault, rung and next step."""

    node: str
    pool: str
    state: str
    fault_class: str | None
    reason: str
    gpus: tuple[str, ...]
    action: str | None
    """The rung under way (the stage's action), None outside a remediation."""
    next_step: str
    problems: tuple[str, ...] = ()
    """Annotations or labels that could not be read (each treated as absent)."""
    dry_run: bool = False


@dataclass(frozen=True)
class NodePlan:
    """One node's step. Apply `patch` first; only when it succeeded, run `drain`, `restart_validator`, `cloud`."""

    node: str
    before: State
    after: State
    patch: NodePatch | None
    drain: DrainPods | None
    restart_validator: RestartValidator | None
    cloud: CloudRequest | None
    local: LocalRequest | None
    """A request to the node agent the patch writes (for logs and metrics)."""
    events: tuple[PlannedEvent, ...]
    step: NodeStep
    dry_run: bool = False
    would: tuple[str, ...] = ()
    """In dry-run: what would have been done."""


@dataclass(frozen=True)
class PlanMetrics:
    quarantined: Mapping[tuple[str, str], int]
    """(pool, fault class) -> nodes quarantined after this plan (needs-human included)."""
    started: tuple[str, ...]
    """The actions started by this plan (one entry per node and action: drain, reset-gpu, reboot, reimage)."""
    finished: tuple[tuple[str, str], ...]
    """(action, `success` or `failed`) of the actions that ended in this plan."""
    cordon_latency_seconds: tuple[float, ...]
    """For each node quarantined by this plan: from its condition's lastTransitionTime to now."""
    breakers: tuple[BreakerStatus, ...]
    """The cluster's breaker and each pool's own, after this plan (`holding`, and nodes it deferred now)."""


@dataclass(frozen=True)
class RemediationPlan:
    nodes: Mapping[str, NodePlan]
    metrics: PlanMetrics
    requeue_after: float | None
    """Seconds until a deadline or a poll needs another plan without a Node event (None: none pending)."""
    problems: tuple[str, ...] = field(default=())
    """`<node>: <problem>` for every label or annotation that could not be read."""

    @property
    def patches(self) -> tuple[NodePatch, ...]:
        return tuple(p.patch for p in self.nodes.values() if p.patch is not None)

    @property
    def events(self) -> tuple[PlannedEvent, ...]:
        return tuple(e for p in self.nodes.values() for e in p.events)

    @property
    def steps(self) -> tuple[NodeStep, ...]:
        return tuple(p.step for p in self.nodes.values())


def _priority(ctx: NodeContext) -> tuple[float, str]:
    record = ctx.record()
    return (record.since if record is not None else math.inf, ctx.name)


def _would(out: Outcome) -> tuple[str, ...]:
    done = []
    if out.state is not out.ctx.state:
        done.append(f"set {out.state.value or 'no state'}")
    if out.unschedulable is not None:
        done.append("cordon" if out.unschedulable else "uncordon")
    if out.taints is not None:
        done.append("change the taints")
    for action, what in ((out.drain, "drain"), (out.cloud, "ask the cloud"), (out.local, "ask the node agent"),
                         (out.restart_validator, "restart the validator")):
        if action is not None:
            done.append(what)
    return tuple(done)


def _node_step(out: Outcome, state: State) -> NodeStep:
    ctx = out.ctx
    record = ctx.record()
    stage = ctx.stage if out.dry_run else parse_stage(
        out.annotations.get(STAGE_ANNOTATION, ctx.view.annotations.get(STAGE_ANNOTATION))).value
    next_step = f"dry run: would {out.next_step}" if out.dry_run and out.next_step else out.next_step
    return NodeStep(ctx.name, ctx.view.pool, state.value, record.fault_class if record else None,
                    record.reason if record else "", tuple(g.uuid for g in record.gpus) if record else (),
                    stage.action if stage is not None and state is not State.ABSENT else None, next_step,
                    tuple(out.problems), out.dry_run)


def _node_plan(out: Outcome) -> NodePlan:
    ctx = out.ctx
    if out.dry_run:
        events = tuple(PlannedEvent(ctx.name, DRY_RUN_REASON, f"dry run, would: {e.message}", e.warning)
                       for e in out.events)
        return NodePlan(ctx.name, ctx.state, ctx.state, None, None, None, None, None, events,
                        _node_step(out, ctx.state), True, _would(out))
    changed = out.labels or out.annotations or out.unschedulable is not None or out.taints is not None
    patch = NodePatch(ctx.name, dict(out.labels), dict(out.annotations), out.unschedulable, out.taints) \
        if changed else None
    return NodePlan(ctx.name, ctx.state, out.state, patch, out.drain, out.restart_validator, out.cloud, out.local,
                    tuple(out.events), _node_step(out, out.state))


def plan(nodes: Mapping[str, NodeView], policy: RemediationPolicy, now: float) -> RemediationPlan:
    """One step for every GPU node; see the module docstring."""
    contexts = sorted((read_node(view, policy, now) for view in nodes.values()), key=_priority)
    budget = Budget(policy, [(ctx.view.pool, ctx.state) for ctx in contexts])
    outcomes = [step(ctx, budget) for ctx in contexts]
    plans = {out.ctx.name: _node_plan(out) for out in sorted(outcomes, key=lambda o: o.ctx.name)}
    enforced = [out for out in outcomes if not out.dry_run]
    quarantined: Counter[tuple[str, str]] = Counter()
    for out in outcomes:
        record, after = out.ctx.record(), plans[out.ctx.name].after
        if after in QUARANTINED and record is not None:
            quarantined[(out.ctx.view.pool, record.fault_class)] += 1
    metrics = PlanMetrics(
        quarantined=MappingProxyType(dict(quarantined)),
        started=tuple(action for out in enforced for action in out.started),
        finished=tuple(result for out in enforced for result in out.finished),
        cordon_latency_seconds=tuple(sample for out in enforced for sample in out.latency),
        breakers=budget.statuses(),
    )
    wakes = [out.wake_at for out in enforced if out.wake_at is not None]
    problems = tuple(f"{out.ctx.name}: {problem}" for out in outcomes for problem in out.problems)
    return RemediationPlan(MappingProxyType(plans), metrics, max(min(wakes) - now, 0.0) if wakes else None,
                           problems)
