"""Policy as code: pure checks over a stack's rendered objects, for `gpu-operator check` (no Pulumi import)."""

from gpu_operator.policy.catalog import POLICIES
from gpu_operator.policy.context import PolicyContext
from gpu_operator.policy.model import Enforcement, Policy, Severity, Violation
from gpu_operator.policy.report import EXIT_MANDATORY, Finding, check, format_json, format_sarif, format_text

__all__ = [
    "EXIT_MANDATORY",
    "Enforcement",
    "Finding",
    "POLICIES",
    "Policy",
    "PolicyContext",
    "Severity",
    "Violation",
    "check",
    "format_json",
    "format_sarif",
    "format_text",
]
