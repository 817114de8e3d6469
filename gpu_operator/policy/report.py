"""`gpu-operator check`: run every policy over a config's rendered objects and report, worst first."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpu_operator.counts import count_phrase
from gpu_operator.policy.catalog import POLICIES
from gpu_operator.policy.context import PolicyContext
from gpu_operator.policy.model import Enforcement, Object, Policy, Severity, Violation

__all__ = ["EXIT_MANDATORY", "Finding", "check", "format_json", "format_sarif", "format_text"]

#: A mandatory policy is violated (2 stays bad input, 1 a bug).
EXIT_MANDATORY = 3
_ORDER = [Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW]


@dataclass(frozen=True)
class Finding:
    policy: Policy
    violation: Violation


def check(objects: Iterable[Object], context: PolicyContext | None = None,
          policies: Sequence[Policy] | None = None) -> list[Finding]:
    objects = list(objects)
    findings = [Finding(policy, violation) for policy in (policies or POLICIES)
                if policy.enforcement is not Enforcement.DISABLED for violation in policy.evaluate(objects, context)]
    return sorted(findings, key=lambda f: (_ORDER.index(f.policy.severity), f.policy.name, f.violation.resource))


def format_text(findings: Sequence[Finding], checked: int, charts: int = 0) -> str:
    """Violations worst first, each with its fix; `checked` Kubernetes objects and `charts` Helm charts were judged."""
    counted = count_phrase(checked, charts)
    if not findings:
        return f"{counted}: no violations\n"
    lines = []
    for severity in _ORDER:
        group = [f for f in findings if f.policy.severity is severity]
        if not group:
            continue
        lines.append(f"{severity.value.upper()} ({len(group)})")
        for policy in dict.fromkeys(f.policy for f in group):  # each policy's violations, then its fix once
            lines += [f"  [{policy.enforcement.value}] {policy.name}: {f.violation.resource}: {f.violation.message}"
                      for f in group if f.policy is policy]
            lines.append(f"      fix: {policy.remediation}")
    lines.append(f"{counted}: {_tally(findings)}")
    return "\n".join(lines) + "\n"


def _tally(findings: Sequence[Finding]) -> str:
    """`8 violations of 2 policies, none mandatory`, `1 violation of 1 policy, mandatory`."""
    policies = {f.policy.name for f in findings}
    mandatory = sum(f.policy.enforcement is Enforcement.MANDATORY for f in findings)
    violations = f"{len(findings)} violation{'s' if len(findings) != 1 else ''}"
    of = f"of {len(policies)} polic{'ies' if len(policies) != 1 else 'y'}"
    if mandatory == 0:
        return f"{violations} {of}, none mandatory"
    if mandatory == len(findings):
        return f"{violations} {of}, {'all' if mandatory > 1 else 'it'} mandatory (exit 3)"
    return f"{violations} {of}, {mandatory} of them mandatory (exit 3)"


def format_json(findings: Sequence[Finding], checked: int, charts: int = 0) -> str:
    return json.dumps({
        "objects": checked,
        "charts": charts,
        "violations": [{
            "policy": f.policy.name, "severity": f.policy.severity.value, "enforcement": f.policy.enforcement.value,
            "resource": f.violation.resource, "message": f.violation.message, "remediation": f.policy.remediation,
        } for f in findings],
    }, indent=2) + "\n"


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def format_sarif(findings: Sequence[Finding], checked: int, charts: int = 0) -> str:
    """SARIF 2.1.0 for CI code-scanning: one rule per policy, one result per violation, located by object."""
    rules = [{
        "id": policy.name,
        "shortDescription": {"text": policy.description},
        "help": {"text": policy.remediation},
        "defaultConfiguration": {"level": "error" if policy.enforcement is Enforcement.MANDATORY else "warning"},
        "properties": {"severity": policy.severity.value, "enforcement": policy.enforcement.value},
    } for policy in POLICIES]
    index = {policy.name: number for number, policy in enumerate(POLICIES)}
    results = [{
        "ruleId": f.policy.name,
        "ruleIndex": index[f.policy.name],
        "level": "error" if f.policy.enforcement is Enforcement.MANDATORY else "warning",
        "message": {"text": f"{f.violation.message}. Fix: {f.policy.remediation}"},
        "locations": [{"logicalLocations": [{"fullyQualifiedName": f.violation.resource, "kind": "resource"}]}],
    } for f in findings]
    return json.dumps({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "gpu-operator check", "rules": rules}},
            "results": results,
            "properties": {"objects": checked, "charts": charts},
        }],
    }, indent=2) + "\n"
