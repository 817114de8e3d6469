"""Every policy, in the order reports list them within a severity."""

from __future__ import annotations

from gpu_operator.policy.fleet import FLEET_POLICIES
from gpu_operator.policy.model import Policy
from gpu_operator.policy.remediation import REMEDIATION_POLICIES
from gpu_operator.policy.resources import RESOURCE_POLICIES

__all__ = ["POLICIES"]

POLICIES: tuple[Policy, ...] = RESOURCE_POLICIES + FLEET_POLICIES + REMEDIATION_POLICIES
