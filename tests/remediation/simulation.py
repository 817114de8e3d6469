"""A small simulated fleet for the planner: the controller's actuator and the node agents, in memory.

Each round plans, then for every node applies its patch and only then its actions (the actuator's order); a
crash stops the round after any write, and the actuator's memory (drain and cloud feedback) is lost with it, as a
restarted leader loses it. The node side answers as the health monitor does: a reset request gets a result, a
reboot a new boot ID with the XID-born conditions cleared, operands stop once paused, drains empty the node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gpu_operator.remediation import (
    CloudFeedback,
    DrainFeedback,
    NodeCondition,
    NodeView,
    RemediationPlan,
    RemediationPolicy,
    apply_patch,
    plan,
)
from gpu_operator.remediation.encoding import format_reset_result, pending_reboot, pending_reset
from gpu_operator.remediation.encoding import ResetResult
from gpu_operator.remediation.vocabulary import OPERAND_APPS, RESET_RESULT_ANNOTATION

GPU = "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
PCI = "0000:17:00.0"
CONDITIONS = {"fallen-off-bus": ("GPUFallenOffBus", "XID79", "GPU has fallen off the bus"),
              "reset-required": ("GPUResetRequired", "XID48", "Double Bit ECC Error"),
              "reboot-required": ("GPURebootRequired", "XID151", "Reboot required"),
              "hardware-failure": ("GPUHardwareFailure", "RowRemapFailed", "Row remap failure"),
              "thermal": ("GPUThermal", "ThermalViolation", "Thermal violation")}


def fault(fault_class: str, since: float, gpu: str = GPU, pci: str = PCI) -> NodeCondition:
    """The condition the health monitor writes for a fault of this class on one GPU."""
    kind, reason, text = CONDITIONS[fault_class]
    number = reason.removeprefix("XID")
    what = f'XID {number} "{text}"' if number.isdigit() else text
    return NodeCondition(kind, "True", reason, f"{gpu} ({pci}): {what}", since)


def node(name: str, *conditions: NodeCondition, pool: str = "h100", **fields: object) -> NodeView:
    labels = {key: "true" for key in OPERAND_APPS if key != "nvidia.com/gpu.deploy.client"}
    base = NodeView(name, pool=pool, labels=labels, conditions=conditions, boot_id=f"{name}-boot-0",
                    validator_ready=True, validator_ready_since=0.0)
    return replace(base, **fields)  # type: ignore[arg-type]


@dataclass
class Behaviour:
    """How one node's side answers."""

    reset: str = "success"          # success | failed | silent
    reboot: bool = True             # a reboot brings a new boot ID (and clears XID conditions)
    refault_after_reboot: bool = False
    drain_rounds: int = 1           # drain passes before the node is empty
    blocked: bool = False           # a PodDisruptionBudget refuses every eviction
    cloud: list[str] = field(default_factory=list)   # outcomes of successive cloud calls (default: succeeded)
    validator: bool = True          # a fresh validator pod becomes Ready
    operands_stop: bool = True      # the paused operands' pods go


@dataclass
class Fleet:
    policy: RemediationPolicy
    views: dict[str, NodeView]
    behaviour: dict[str, Behaviour] = field(default_factory=dict)
    now: float = 1000.0
    plans: list[RemediationPlan] = field(default_factory=list)
    reboots: dict[str, int] = field(default_factory=dict)
    cloud_calls: list[tuple[str, str, str]] = field(default_factory=list)
    resets: list[tuple[str, str]] = field(default_factory=list)
    drained: dict[str, int] = field(default_factory=dict)

    def of(self, name: str) -> Behaviour:
        return self.behaviour.setdefault(name, Behaviour())

    def round(self, crash_after: Callable[[str, str], bool] | None = None, step: float = 5.0) -> RemediationPlan:
        """Plan and carry out one round; `crash_after(node, what)` True stops the round after that write."""
        result = plan(self.views, self.policy, self.now)
        self.plans.append(result)
        crashed = False
        for name, node_plan in result.nodes.items():
            view = apply_patch(self.views[name], node_plan.patch)
            self.views[name] = view
            if crash_after is not None and crash_after(name, "patch"):
                crashed = True
                break
            self._act(name, node_plan)
        if crashed:  # a new leader: the actuator's memory is gone
            self.views = {n: replace(v, drain=None, cloud=None) for n, v in self.views.items()}
        for name in self.views:
            self._node_side(name)
        self.now += step
        return result

    def _act(self, name: str, node_plan: object) -> None:
        view, behaviour = self.views[name], self.of(name)
        drain = getattr(node_plan, "drain")
        if drain is not None:
            self.drained[name] = self.drained.get(name, 0) + 1
            left = 0 if self.drained[name] >= behaviour.drain_rounds and not behaviour.blocked else 2
            blocked = "a PodDisruptionBudget refused" if behaviour.blocked else ""
            view = replace(view, drain=DrainFeedback(drain.gpus, left, self.now, blocked))
        restart = getattr(node_plan, "restart_validator")
        if restart is not None:
            view = replace(view, validator_ready=behaviour.validator,
                           validator_ready_since=self.now + 1 if behaviour.validator else None)
        cloud = getattr(node_plan, "cloud")
        if cloud is not None:
            self.cloud_calls.append((name, cloud.action, cloud.request))
            outcome = behaviour.cloud.pop(0) if behaviour.cloud else "succeeded"
            retry = outcome in ("throttled", "conflict")
            view = replace(view, cloud=CloudFeedback(cloud.request, cloud.action, outcome, self.now, retry,
                                                     10.0 if outcome == "throttled" else None, "refused"))
            if outcome == "succeeded":
                view = self._reboot(name, view)
        self.views[name] = view

    def _reboot(self, name: str, view: NodeView) -> NodeView:
        behaviour = self.of(name)
        if not behaviour.reboot:
            return view
        count = self.reboots[name] = self.reboots.get(name, 0) + 1
        conditions = tuple(c if c.reason[:3] != "XID" or behaviour.refault_after_reboot
                           else replace(c, status="False", reason="NoFault", last_transition_time=self.now + 1)
                           for c in view.conditions)
        if behaviour.refault_after_reboot:
            conditions = tuple(replace(c, last_transition_time=self.now + 2) for c in conditions)
        return replace(view, boot_id=f"{name}-boot-{count}", conditions=conditions)

    def _node_side(self, name: str) -> None:
        """The health monitor and kubelet: answer requests, stop paused operands."""
        view, behaviour = self.views[name], self.of(name)
        paused = any(view.labels.get(key) == "paused-for-gpu-reset" for key in OPERAND_APPS)
        if paused and behaviour.operands_stop:
            view = replace(view, operand_pods=0)
        request = pending_reset(view.annotations)
        if request is not None and behaviour.reset != "silent":
            self.resets.append((name, request.request))
            ok = behaviour.reset == "success"
            notes = {**view.annotations, RESET_RESULT_ANNOTATION: format_reset_result(
                ResetResult(request.request, ok, "" if ok else "nvidia-smi -r: In use by another client"))}
            conditions = tuple(replace(c, status="False", reason="NoFault", last_transition_time=self.now + 1)
                               if ok and c.type == "GPUResetRequired" else c for c in view.conditions)
            view = replace(view, annotations=notes, conditions=conditions)
        reboot = pending_reboot(view.annotations, view.boot_id)
        if reboot is not None:
            view = self._reboot(name, view)
        self.views[name] = view

    def state(self, name: str) -> str:
        return self.views[name].labels.get("nvidia.com/gpu-remediation.state", "")

    def run(self, rounds: int, **kwargs: object) -> None:
        for _ in range(rounds):
            self.round(**kwargs)  # type: ignore[arg-type]
