"""The `remediation` section: what the operator controller does about GPU faults, on by default in observe mode.

```yaml
remediation:
  mode: observe              # observe (default): Events, metrics, the `observing` state | enforce | dry-run
  rules:                     # per fault class; a class left out keeps its catalog ladder
    reset-required: {actions: [cordon, drain, reset-gpu, reboot, needs-human], dryRun: false}
  xids: {ignore: [], classify: {"109": reset-required}}   # the catalog overridden, per XID (the node agent's)
  drain: {mode: evict, timeoutSeconds: 600, deleteAfterSeconds: 0, partial: true}
  taint: {key: nvidia.com/gpu-fault, effect: NoSchedule}
  attempts: {max: 3, windowSeconds: 86400}                 # repairs per node per window, then needs-human
  minRebootIntervalSeconds: 1800
  maxConcurrent: 5                                         # nodes past quarantine at once, cluster-wide
  breaker: {maxNodes: 10, maxPercent: 10}                  # nodes quarantined at once, cluster-wide
  pools: {h100: {mode: enforce, breaker: {maxNodes: 2}, rules: {...}}}
  cloud: {provider: null, reimage: true, aksAutoRepair: false}   # provider: azure reboots/reimages through Azure
  timeouts: {resetGpuSeconds: 600, rebootSeconds: 1800, reimageSeconds: 3600, validationSeconds: 1800,
             aksRepairSeconds: 3600}
```

The section is typed here and checked all at once: an unknown action, fault class or XID is refused with its
path and the valid words, a ladder that cannot climb is refused by the remediation's own rule
(:func:`gpu_operator.remediation.policy.ladder_problem`), and what spans sections (pools named here that the
document does not have, a reimage without the cloud) is checked in :mod:`gpu_operator.config.remediation_checks`.
The defaults are the planner's (:class:`gpu_operator.remediation.RemediationPolicy`), and :meth:`settings_document`
is what the render writes into the controller's settings, every default spelled out, so `pulumi preview` shows a
rule change as a diff of the settings ConfigMap.

`observe` is the default because acting is a decision a fleet's owner takes: with it, every fault is labelled on
its node and reported as an Event and in the metrics from the first day, and the labels show what `enforce` would
act on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.facts.kube_names import qualified_name_problem
from gpu_operator.faults import ACTIONS, CATALOG_XIDS, FAULT_CLASSES
from gpu_operator.remediation import (
    Attempts,
    CloudSpec,
    DrainSpec,
    RemediationPolicy,
    TaintSpec,
    Timeouts,
    policy_from_document,
)
from gpu_operator.remediation import Mode as PolicyMode
from gpu_operator.remediation.policy import ladder_problem

__all__ = ["RemediationSpec"]

_DEFAULTS = RemediationPolicy()


def _fault_class(name: str) -> str:
    if name not in FAULT_CLASSES:
        raise ValueError(f"unknown fault class {name!r}: use {', '.join(FAULT_CLASSES)}")
    return name


def _action(name: str) -> str:
    if name not in ACTIONS:
        raise ValueError(f"unknown action {name!r}: use {', '.join(ACTIONS)}")
    return name


def _xid(code: int) -> int:
    if code not in CATALOG_XIDS:
        raise ValueError(f"{code} is no XID: NVIDIA's catalog numbers them {CATALOG_XIDS.start}-"
                         f"{CATALOG_XIDS.stop - 1}")
    return code


def _taint_key(key: str) -> str:
    problem = qualified_name_problem(key, "taint key")
    if problem is not None:
        raise ValueError(problem)
    return key


FaultClassName = Annotated[str, AfterValidator(_fault_class)]
ActionName = Annotated[str, AfterValidator(_action)]
Xid = Annotated[int, AfterValidator(_xid)]
Mode = Literal["observe", "enforce", "dry-run"]


class RemediationDrain(ConfigModel):
    """How a node (or only the pods of its faulty GPUs) is emptied; every mode ends at `timeoutSeconds`."""

    mode: Literal["evict", "delete", "wait-for-completion"] = Field(
        default=DrainSpec().mode.value, description="evict (PDBs respected), delete after deleteAfterSeconds, or "
                                                    "wait-for-completion (let the pods finish)")
    timeout_seconds: int = Field(default=DrainSpec().timeout_seconds, ge=1,
                                 description="a drain with pods left then fails, and the node needs a person")
    delete_after_seconds: int = Field(default=DrainSpec().delete_after_seconds, ge=0,
                                      description="with delete: evict until then, delete what is left after")
    partial: bool = Field(default=DrainSpec().partial,
                          description="before a GPU reset, drain only the pods holding the faulty GPUs")

    @model_validator(mode="after")
    def _deletes_before_the_end(self) -> RemediationDrain:
        if self.mode == "delete" and self.delete_after_seconds >= self.timeout_seconds:
            raise ValueError(f"deleteAfterSeconds {self.delete_after_seconds} must be under timeoutSeconds "
                             f"{self.timeout_seconds}: the pods left are deleted before the drain gives up")
        return self


class RemediationTaint(ConfigModel):
    key: Annotated[str, AfterValidator(_taint_key)] = TaintSpec().key
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = TaintSpec().effect  # type: ignore[assignment]


class RemediationRule(ConfigModel):
    """One fault class's rule: its ladder (default: the catalog's), dry-run, and its own drain or taint."""

    actions: tuple[ActionName, ...] | None = Field(default=None, description="default: the catalog's ladder")
    dry_run: bool = False
    drain: RemediationDrain | None = None
    taint: RemediationTaint | None = None

    @field_validator("actions")
    @classmethod
    def _ladder(cls, actions: tuple[str, ...] | None) -> tuple[str, ...] | None:
        problem = None if actions is None else ladder_problem(actions)
        if problem is not None:
            raise ValueError(problem)
        return actions


Rules = dict[FaultClassName, RemediationRule]


class RemediationAttempts(ConfigModel):
    max: int | None = Field(default=Attempts().max, ge=1, description="null: no limit")
    window_seconds: int = Field(default=Attempts().window_seconds, ge=60)


class RemediationBreaker(ConfigModel):
    """At most `maxNodes` nodes, and `maxPercent` of the nodes (rounded up), quarantined at once; null: no limit."""

    max_nodes: int | None = Field(default=None, ge=1)
    max_percent: int | None = Field(default=None, ge=1, le=100)


class RemediationPool(ConfigModel):
    mode: Mode | None = Field(default=None, description="default: the section's")
    breaker: RemediationBreaker | None = Field(default=None, description="the pool's own, beside the cluster's")
    rules: Rules = {}


class RemediationCloud(ConfigModel):
    provider: Literal["azure"] | None = Field(
        default=None, description="azure: reboot and reimage through the scale set API (the stack grants an identity)")
    reimage: bool = Field(default=CloudSpec().reimage, description="allow reimage (and grant it)")
    aks_auto_repair: bool = Field(default=CloudSpec().aks_auto_repair,
                                  description="leave NotReady nodes to AKS node auto-repair")


class RemediationTimeouts(ConfigModel):
    reset_gpu_seconds: int = Field(default=Timeouts().reset_gpu_seconds, ge=1)
    reboot_seconds: int = Field(default=Timeouts().reboot_seconds, ge=1)
    reimage_seconds: int = Field(default=Timeouts().reimage_seconds, ge=1)
    validation_seconds: int = Field(default=Timeouts().validation_seconds, ge=1)
    aks_repair_seconds: int = Field(default=Timeouts().aks_repair_seconds, ge=1)


class RemediationXids(ConfigModel):
    """The catalog overridden per XID, for the node agent: `ignore` raises nothing, `classify` another class."""

    ignore: tuple[Xid, ...] = ()
    classify: dict[Xid, FaultClassName] = {}

    @model_validator(mode="after")
    def _once(self) -> RemediationXids:
        both = sorted(set(self.ignore) & set(self.classify))
        if both:
            raise ValueError(f"XID {', '.join(map(str, both))} is both ignored and classified: choose one")
        return self


class RemediationSpec(ConfigModel):
    mode: Mode = _DEFAULTS.mode.value  # type: ignore[assignment]
    rules: Rules = {}
    xids: RemediationXids = RemediationXids()
    drain: RemediationDrain = RemediationDrain()
    taint: RemediationTaint = RemediationTaint()
    attempts: RemediationAttempts = RemediationAttempts()
    min_reboot_interval_seconds: int = Field(default=_DEFAULTS.min_reboot_interval_seconds, ge=0)
    max_concurrent: int = Field(default=_DEFAULTS.max_concurrent, ge=1, le=10000,
                                description="nodes past quarantine at once, cluster-wide")
    breaker: RemediationBreaker = RemediationBreaker(max_nodes=_DEFAULTS.breaker.max_nodes,
                                                     max_percent=_DEFAULTS.breaker.max_percent)
    pools: dict[str, RemediationPool] = {}
    cloud: RemediationCloud = RemediationCloud()
    timeouts: RemediationTimeouts = RemediationTimeouts()

    def settings_document(self) -> dict[str, Any]:
        """The section as the controller's settings hold it: camelCase, every default and null spelled out."""
        return self.model_dump(mode="json", by_alias=True)

    def policy(self) -> RemediationPolicy:
        """The planner's policy (what the controller reads back from the settings)."""
        return policy_from_document(self.settings_document())

    def drains_partially(self, pools: Iterable[str] = ()) -> bool:
        """Whether a rule may drain only the pods of the faulty GPUs (before a reset), in a mode that acts or
        dry-runs, in the cluster or any of `pools`: the node agent then tells which pods hold which GPU (it reads
        the kubelet's pod-resources socket) and the controller reads NVIDIA's ResourceSlices for DRA claims."""
        policy = self.policy()
        for pool in ("", *policy.pools, *pools):
            if policy.mode_for(pool) is PolicyMode.OBSERVE:
                continue
            for fault_class in FAULT_CLASSES:
                rule = policy.rule_for(pool, fault_class)
                if rule.drain.partial and "drain" in rule.actions and "reset-gpu" in rule.actions:
                    return True
        return False

    def fault_taints(self) -> list[dict[str, str]]:
        """The taints a `taint` rung may add (any class, any pool, unless every rule only observes), as the
        tolerations the GPU operands carry: after a GPU reset their pods must come back to the tainted node, and the
        validator must run there before the node is handed back."""
        policy = self.policy()
        found: list[dict[str, str]] = []
        for pool in ("", *policy.pools):
            for fault_class in FAULT_CLASSES:
                rule = policy.rule_for(pool, fault_class)
                toleration = {"key": rule.taint.key, "operator": "Exists", "effect": rule.taint.effect}
                if "taint" in rule.actions and toleration not in found:
                    found.append(toleration)
        return found

