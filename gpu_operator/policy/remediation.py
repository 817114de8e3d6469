"""The remediation's guardrails as a policy: a production stack does not reboot or reimage nodes without bounds.

A rule that enforces a `reboot` or `reimage` rung lets the controller take GPU nodes down by itself. Without a
breaker (`remediation.breaker`, or the pool's own) a fault that hits many nodes at once (a bad driver, a rack's
power) takes them all out of service; without a rate cap (`remediation.attempts.max`, or
`remediation.minRebootIntervalSeconds`) a node whose fault keeps coming back is rebooted over and over. NVSentinel
users met both (77 nodes cordoned after one job's XID 45; a stale event rebooting a node back in service).

The policy reads the remediation section where the stack carries it: the operator controller's settings ConfigMap
(`gpu-operator-controller`, key `controller.json`), so `gpu-operator check` and the CrossGuard pack judge the same
object. Advisory, and only for a production stack (`check --production`, the pack's `production` config), as the
other production-only policies are: `observe` and `dry-run` (the default is `observe`) restart nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from gpu_operator.policy.context import PolicyContext
from gpu_operator.policy.model import Enforcement, Object, Policy, Severity
from gpu_operator.remediation import PolicyError, policy_from_document
from gpu_operator.render.operands.operator_controller import SETTINGS_CONFIG_MAP, SETTINGS_FILE

__all__ = ["REMEDIATION_POLICIES"]


def _unguarded_restarts(objects: list[Object], context: PolicyContext) -> Iterator[tuple[Object, str]]:
    if not context.production:
        return
    for obj in objects:
        if obj.get("kind") != "ConfigMap" or (obj.get("metadata") or {}).get("name") != SETTINGS_CONFIG_MAP:
            continue
        text = (obj.get("data") or {}).get(SETTINGS_FILE)
        if not isinstance(text, str):
            continue
        try:
            settings = json.loads(text)
            policy = policy_from_document(settings.get("remediation") or {})
        except (ValueError, AttributeError) as error:
            problem = str(error) if isinstance(error, PolicyError) else "it is not a JSON object"
            yield obj, f"its remediation settings cannot be read ({problem})"
            continue
        for finding in policy.unguarded_restarts():
            yield obj, f"remediation in {finding}: a fault on many nodes, or one that keeps coming back, restarts " \
                       "nodes without bound"


REMEDIATION_POLICIES: tuple[Policy, ...] = (
    Policy("remediation-restarts-are-bounded",
           "A production stack's remediation reboots or reimages GPU nodes only under a breaker and a rate cap.",
           Severity.HIGH, Enforcement.ADVISORY,
           "Set remediation.breaker (maxNodes and/or maxPercent; or the pool's own under remediation.pools) and "
           "remediation.attempts.max or remediation.minRebootIntervalSeconds; or keep those rules in observe or "
           "dry-run (remediation.mode, a pool's mode, a rule's dryRun).",
           _unguarded_restarts),
)
