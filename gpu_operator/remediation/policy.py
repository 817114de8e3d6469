"""The remediation's typed rules: what to do about each fault class, per pool, and the guardrails around it.

A :class:`RemediationPolicy` is what the config document's `remediation` section becomes in the controller
(:mod:`gpu_operator.remediation.document` reads it from the rendered settings). Its parts:

* `mode`: `observe` (the default: faults are reported as Events, metrics and the `observing` state, nothing is
  done), `enforce`, or `dry-run` (every step is planned and reported, nothing is written); a pool may have its own.
* `rules`: per fault class, an action ladder from :data:`~gpu_operator.faults.ACTIONS` (a class left out keeps its
  catalog default), a `dryRun` of its own, and optionally its own `drain` and `taint`; a pool may replace rules.
* `drain`: `evict` (the Eviction API, PodDisruptionBudgets respected), `delete` (evict, then delete what is left
  after `deleteAfterSeconds`, PDBs or not) or `wait-for-completion` (evict nothing, let the pods finish); every
  mode ends at `timeoutSeconds` (a drain that has not emptied the node by then fails, with what was left);
  `partial`: before a GPU reset, drain only the pods that hold the faulty GPUs.
* `taint`: the key and effect of the taint a `taint` rung adds (its value is the fault class).
* guardrails: `attempts.max` repairs per node per `attempts.windowSeconds` (then `needs-human`),
  `minRebootIntervalSeconds` between two reboots (or reimages) of a node, `maxConcurrent` nodes past quarantine at
  once, and the breakers: cluster-wide and per pool, at most `maxNodes` nodes (and `maxPercent` of the nodes)
  quarantined at once.
* `cloud`: `provider: azure` reboots and reimages through the scale set API (without it a reboot is asked of the
  node's agent and there is no reimage); `aksAutoRepair` leaves NotReady nodes to AKS node auto-repair.
* `timeouts`: how long each repair and the validation after it may take before the rung counts as failed.

A ladder is `[observe]`, or starts by taking the node out of scheduling (`cordon` and/or `taint`) and goes on in
the order of `ACTIONS` (`drain`, `reset-gpu`, `reboot`, `reimage`, `needs-human` last): so a rung's place in
`ACTIONS` is its place in every ladder, and a policy changed mid-remediation still tells where a node stands.
Classes the health monitor writes no condition for (`application`, `informational`) can only be observed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

from gpu_operator.faults import ACTIONS, CATALOG_XIDS, FAULT_CLASSES, QUARANTINE_ACTIONS, FaultClass, xid_entry

__all__ = [
    "DEFAULT_TAINT_KEY",
    "TAINT_EFFECTS",
    "Attempts",
    "Breaker",
    "CloudSpec",
    "DrainMode",
    "DrainSpec",
    "EffectiveRule",
    "Mode",
    "PolicyError",
    "PoolPolicy",
    "RemediationPolicy",
    "Rule",
    "TaintSpec",
    "Timeouts",
    "XidOverrides",
    "drain_problem",
    "ladder_problem",
    "rule_problems",
    "xid_problems",
]

DEFAULT_TAINT_KEY = "nvidia.com/gpu-fault"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
CLOUD_PROVIDERS = ("azure",)
_PREPARATION = QUARANTINE_ACTIONS | {"observe", "drain"}


class PolicyError(ValueError):
    """A policy that cannot be carried out; `problems` lists each `(path, message)` at once."""

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{path}: {message}" if path else message for path, message in self.problems))


class Mode(str, Enum):
    OBSERVE = "observe"
    ENFORCE = "enforce"
    DRY_RUN = "dry-run"


class DrainMode(str, Enum):
    EVICT = "evict"
    DELETE = "delete"
    WAIT_FOR_COMPLETION = "wait-for-completion"


@dataclass(frozen=True)
class DrainSpec:
    mode: DrainMode = DrainMode.EVICT
    timeout_seconds: int = 600
    """Every mode ends here: pods still on the node then fail the drain."""
    delete_after_seconds: int = 0
    """With `delete`: evict until then, delete what is left after (0: delete at once)."""
    partial: bool = True
    """Before a GPU reset, drain only the pods that hold the faulty GPUs."""


@dataclass(frozen=True)
class TaintSpec:
    key: str = DEFAULT_TAINT_KEY
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Rule:
    """A rule as written: what is left out (None) comes from the catalog or the section."""

    actions: tuple[str, ...] | None = None
    dry_run: bool = False
    drain: DrainSpec | None = None
    taint: TaintSpec | None = None


@dataclass(frozen=True)
class EffectiveRule:
    """The rule a node's fault gets: its class's ladder with everything filled in."""

    fault_class: str
    actions: tuple[str, ...]
    dry_run: bool
    drain: DrainSpec
    taint: TaintSpec

    @property
    def observe_only(self) -> bool:
        return self.actions == ("observe",)

    @property
    def severity(self) -> int:
        """How drastic the first rung past quarantine and drain is (a ladder without one: its last rung)."""
        beyond = [a for a in self.actions if a not in _PREPARATION]
        return ACTIONS.index((beyond or list(self.actions))[0 if beyond else -1])

    def next_rung(self, after: str | None) -> str | None:
        """The ladder's first rung past `after` (None: its first), by place in ACTIONS; None at the end."""
        floor = -1 if after is None else ACTIONS.index(after)
        return next((a for a in self.actions if ACTIONS.index(a) > floor), None)


@dataclass(frozen=True)
class Attempts:
    max: int | None = 3
    """Repairs per node per window; the one past it is `needs-human` (None: no limit)."""
    window_seconds: int = 86400


@dataclass(frozen=True)
class Breaker:
    max_nodes: int | None = None
    max_percent: int | None = None

    @property
    def enabled(self) -> bool:
        return self.max_nodes is not None or self.max_percent is not None

    def limit(self, total: int) -> int | None:
        """The most nodes of `total` that may be quarantined at once (a percentage rounds up); None: no limit."""
        limits = [] if self.max_nodes is None else [self.max_nodes]
        if self.max_percent is not None:
            limits.append(math.ceil(total * self.max_percent / 100))
        return min(limits) if limits else None


@dataclass(frozen=True)
class PoolPolicy:
    mode: Mode | None = None
    breaker: Breaker | None = None
    rules: Mapping[str, Rule] = field(default_factory=dict)


@dataclass(frozen=True)
class CloudSpec:
    provider: str | None = None
    reimage: bool = True
    aks_auto_repair: bool = False

    @property
    def can_reimage(self) -> bool:
        return self.provider is not None and self.reimage


@dataclass(frozen=True)
class Timeouts:
    reset_gpu_seconds: int = 600
    reboot_seconds: int = 1800
    reimage_seconds: int = 3600
    validation_seconds: int = 1800
    aks_repair_seconds: int = 3600
    """AKS node auto-repair's reboot, reimage and redeploy take "up to an hour" (Microsoft's node auto-repair page)."""

    def of(self, action: str) -> int:
        return {"reset-gpu": self.reset_gpu_seconds, "reboot": self.reboot_seconds,
                "reimage": self.reimage_seconds}[action]


@dataclass(frozen=True)
class XidOverrides:
    """The catalog, overridden for some XIDs: ignored ones raise nothing, classified ones take another class."""

    ignore: frozenset[int] = frozenset()
    classify: Mapping[int, str] = field(default_factory=dict)

    def fault_class(self, code: int, catalog_class: FaultClass) -> FaultClass | None:
        """The class an XID the catalog put in `catalog_class` gets here; None when it is ignored."""
        if code in self.ignore:
            return None
        return FAULT_CLASSES[self.classify[code]] if code in self.classify else catalog_class


@dataclass(frozen=True)
class RemediationPolicy:
    mode: Mode = Mode.OBSERVE
    rules: Mapping[str, Rule] = field(default_factory=dict)
    xids: XidOverrides = XidOverrides()
    drain: DrainSpec = DrainSpec()
    taint: TaintSpec = TaintSpec()
    attempts: Attempts = Attempts()
    min_reboot_interval_seconds: int = 1800
    max_concurrent: int = 5
    breaker: Breaker = Breaker(max_nodes=10, max_percent=10)
    pools: Mapping[str, PoolPolicy] = field(default_factory=dict)
    cloud: CloudSpec = CloudSpec()
    timeouts: Timeouts = Timeouts()

    def __post_init__(self) -> None:
        problems = _policy_problems(self)
        if problems:
            raise PolicyError(problems)
        object.__setattr__(self, "rules", MappingProxyType(dict(self.rules)))
        object.__setattr__(self, "pools", MappingProxyType(dict(self.pools)))

    def mode_for(self, pool: str) -> Mode:
        own = self.pools.get(pool)
        return own.mode if own is not None and own.mode is not None else self.mode

    def pool_breaker(self, pool: str) -> Breaker | None:
        own = self.pools.get(pool)
        return own.breaker if own is not None and own.breaker is not None and own.breaker.enabled else None

    def rule_for(self, pool: str, fault_class: str) -> EffectiveRule:
        own = self.pools.get(pool)
        rule = (own.rules.get(fault_class) if own is not None else None) or self.rules.get(fault_class) or Rule()
        actions = rule.actions if rule.actions is not None else FAULT_CLASSES[fault_class].ladder
        return EffectiveRule(fault_class, actions, rule.dry_run, rule.drain or self.drain, rule.taint or self.taint)

    def node_agent_actions(self, pools: Iterable[str] = ()) -> frozenset[str]:
        """What the controller may ask of a node's own agent under this policy (`reset-gpu`, and `reboot` where no
        cloud reboots the node), in the cluster's mode or any of `pools` (and the policy's own pools): what the
        health monitor must be able to carry out. Empty when every such rule only observes or dry-runs."""
        wanted = {"reset-gpu"} | ({"reboot"} if self.cloud.provider is None else set())
        found: set[str] = set()
        for pool in {"", *pools, *self.pools}:
            if self.mode_for(pool) is Mode.ENFORCE:
                found |= {action for name in FAULT_CLASSES for rule in [self.rule_for(pool, name)]
                          if not rule.dry_run for action in rule.actions if action in wanted}
        return frozenset(found)

    def unguarded_restarts(self) -> list[str]:
        """Where rules that enforce a reboot or reimage run without a breaker or a rate cap, in words (empty: none).

        A breaker: the cluster's or the pool's own. A rate cap: `attempts.max`, or `minRebootIntervalSeconds`."""
        capped = self.attempts.max is not None or self.min_reboot_interval_seconds > 0
        found = []
        for pool in ("", *sorted(self.pools)):
            if self.mode_for(pool) is not Mode.ENFORCE:
                continue
            missing = [what for what, present in (
                ("a breaker", self.breaker.enabled or self.pool_breaker(pool) is not None),
                ("a rate cap", capped)) if not present]
            restarting = sorted(name for name in FAULT_CLASSES if _restarts(self.rule_for(pool, name)))
            if missing and restarting:
                where = f"pool {pool}" if pool else "the cluster"
                found.append(f"{where} reboots or reimages ({', '.join(restarting)}) without "
                             f"{' or '.join(missing)}")
        return found


def _restarts(rule: EffectiveRule) -> bool:
    return not rule.dry_run and bool({"reboot", "reimage"} & set(rule.actions))


def ladder_problem(actions: Sequence[str]) -> str | None:
    """Why these actions are no ladder (None: they are one)."""
    unknown = [a for a in actions if a not in ACTIONS]
    if unknown:
        return f"unknown action {unknown[0]!r}: use {', '.join(ACTIONS)}"
    if not actions:
        return "lists no action: give [observe] to only report the fault"
    if "observe" in actions and len(actions) > 1:
        return "observe stands alone: it reports and does nothing else, so it cannot share a ladder"
    if len(set(actions)) < len(actions):
        return "lists an action twice"
    if [ACTIONS.index(a) for a in actions] != sorted(ACTIONS.index(a) for a in actions):
        return f"must follow the order {', '.join(ACTIONS[1:])} (a ladder climbs one way)"
    if actions != ("observe",) and actions[0] not in QUARANTINE_ACTIONS:
        return "must start with cordon or taint: a node leaves scheduling before it is drained or repaired"
    return None


def rule_problems(fault_class: str, actions: Sequence[str], cloud: CloudSpec) -> list[str]:
    """Why a class cannot have this (valid) ladder: a class without a Node condition, or a reimage without one."""
    problems = []
    known = FAULT_CLASSES.get(fault_class)
    if known is not None and known.condition is None and tuple(actions) != ("observe",):
        problems.append(f"{fault_class} faults set no Node condition (Events and metrics only), so nothing acts on "
                        "them: its only ladder is [observe]")
    if "reimage" in actions and not cloud.can_reimage:
        problems.append("reimage needs the cloud: set remediation.cloud.provider: azure (and cloud.reimage not "
                        "false), or drop reimage")
    return problems


def drain_problem(drain: DrainSpec) -> str | None:
    """Why a drain could not end as its mode says (None: it can)."""
    if drain.timeout_seconds < 1:
        return "timeoutSeconds must be at least 1: every drain ends, a stuck one in a failed state"
    if drain.mode is DrainMode.DELETE and not 0 <= drain.delete_after_seconds < drain.timeout_seconds:
        return (f"deleteAfterSeconds {drain.delete_after_seconds} must be under timeoutSeconds "
                f"{drain.timeout_seconds}: the pods left are deleted before the drain gives up")
    return None


def xid_problems(ignore: Sequence[int], classify: Mapping[int, str]) -> list[tuple[str, str]]:
    """Overrides of the catalog that name an unknown XID or class, or the same XID twice."""
    problems = []
    for index, code in enumerate(ignore):
        if code not in CATALOG_XIDS and xid_entry(code) is None:
            problems.append((f"ignore[{index}]", f"{code} is no XID: NVIDIA's catalog numbers them "
                                                 f"{CATALOG_XIDS.start}-{CATALOG_XIDS.stop - 1}"))
    for code, name in classify.items():
        if code not in CATALOG_XIDS and xid_entry(code) is None:
            problems.append((f"classify.{code}", f"{code} is no XID: NVIDIA's catalog numbers them "
                                                 f"{CATALOG_XIDS.start}-{CATALOG_XIDS.stop - 1}"))
        elif name not in FAULT_CLASSES:
            problems.append((f"classify.{code}", f"unknown fault class {name!r}: use {', '.join(FAULT_CLASSES)}"))
        if code in ignore:
            problems.append((f"classify.{code}", "also in ignore: an XID is either ignored or classified"))
    return problems


def _rules_problems(rules: Mapping[str, Rule], cloud: CloudSpec, where: str) -> list[tuple[str, str]]:
    problems = []
    for name, rule in rules.items():
        path = f"{where}rules.{name}"
        if name not in FAULT_CLASSES:
            problems.append((path, f"unknown fault class {name!r}: use {', '.join(FAULT_CLASSES)}"))
            continue
        if rule.actions is None:
            continue
        ladder = ladder_problem(rule.actions)
        problems += [(f"{path}.actions", ladder)] if ladder else []
        problems += [(f"{path}.actions", p) for p in rule_problems(name, rule.actions, cloud)] if not ladder else []
    return problems


def _policy_problems(policy: RemediationPolicy) -> list[tuple[str, str]]:
    problems = _rules_problems(policy.rules, policy.cloud, "")
    for pool, own in policy.pools.items():
        problems += _rules_problems(own.rules, policy.cloud, f"pools.{pool}.")
    problems += [(f"xids.{path}", message) for path, message in xid_problems(
        sorted(policy.xids.ignore), policy.xids.classify)]
    for path, value, floor in (("maxConcurrent", policy.max_concurrent, 1),
                               ("attempts.windowSeconds", policy.attempts.window_seconds, 1),
                               ("minRebootIntervalSeconds", policy.min_reboot_interval_seconds, 0)):
        if value < floor:
            problems.append((path, f"must be at least {floor}"))
    drains = [("drain", policy.drain)] + [(f"rules.{name}.drain", rule.drain) for name, rule in policy.rules.items()]
    drains += [(f"pools.{pool}.rules.{name}.drain", rule.drain)
               for pool, own in policy.pools.items() for name, rule in own.rules.items()]
    problems += [(path, problem) for path, drain in drains if drain is not None
                 for problem in [drain_problem(drain)] if problem]
    if policy.cloud.provider is not None and policy.cloud.provider not in CLOUD_PROVIDERS:
        problems.append(("cloud.provider", f"unknown provider {policy.cloud.provider!r}: use "
                                           f"{', '.join(CLOUD_PROVIDERS)}"))
    return problems
