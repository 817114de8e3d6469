"""Policy as code: pure checks over a stack's rendered objects, for `gpu-operator check` (no Pulumi import)."""

from gpu_operator.policy.model import Enforcement, Policy, Severity, Violation
from gpu_operator.policy.report import EXIT_MANDATORY, Finding, check, format_json, format_text
from gpu_operator.policy.resources import POLICIES

__all__ = [
    "EXIT_MANDATORY",
    "Enforcement",
    "Finding",
    "POLICIES",
    "Policy",
    "Severity",
    "Violation",
    "check",
    "format_json",
    "format_text",
]
