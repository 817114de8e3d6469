"""What a cloud repair came to: a small typed result the remediation planner escalates on.

Every call of :class:`~gpu_operator.agents.cloud.azure_vmss.AzureVmss` ends in exactly one :class:`CloudOutcome`:

* `succeeded`: Azure finished the operation (its long-running operation reported `Succeeded`);
* `failed`: Azure refused or failed it, or it could not be asked (no credential, a providerID that names no scale
  set instance); `reason` says which, with ARM's error code;
* `throttled`: ARM answered 429 and either the retries ran out or it asked for a longer wait than the call may
  spend; `retry_after_seconds` is ARM's `Retry-After`, the earliest moment to ask again;
* `conflict`: ARM answered 409 (another operation holds the instance, or the instance's state forbids the
  operation), or a newer operation preempted this one;
* `timed-out`: the operation was accepted but did not finish within the call's bound. It may still finish: look
  at the instance (:meth:`AzureVmss.instance_state`) or the node's boot id before asking again, never re-issue blind.

`retryable` tells the planner whether the same action may simply be tried later (throttling, conflict, a server or
network error) or whether the ladder should move on (a refused or failed operation). The instance's power and
provisioning state, read after the operation, rides along in `state`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from gpu_operator.agents.cloud.provider_id import VmssInstance

__all__ = ["CloudAction", "CloudOutcome", "CloudResult", "InstanceState"]


class CloudAction(str, Enum):
    """What was asked of the cloud (named as the remediation ladder names its rungs)."""

    REBOOT = "reboot"
    REIMAGE = "reimage"
    READ_STATE = "read-state"


class CloudOutcome(str, Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    THROTTLED = "throttled"
    CONFLICT = "conflict"
    TIMED_OUT = "timed-out"


#: Provisioning states in which Azure is still working on the instance.
_BUSY = frozenset({"creating", "updating", "deleting", "migrating"})


@dataclass(frozen=True)
class InstanceState:
    """A scale set instance's state from its instance view (`ProvisioningState/<x>`, `PowerState/<y>`), lower case."""

    provisioning: str | None
    power: str | None

    @property
    def running(self) -> bool:
        return self.power == "running"

    @property
    def busy(self) -> bool:
        """Azure is still carrying out an operation on the instance."""
        return self.provisioning in _BUSY

    def __str__(self) -> str:
        return f"provisioning {self.provisioning or 'unknown'}, power {self.power or 'unknown'}"


@dataclass(frozen=True)
class CloudResult:
    """The result of one cloud call for one node."""

    action: CloudAction
    outcome: CloudOutcome
    instance: VmssInstance | None = None
    """The scale set instance acted on (None when the providerID named none)."""
    reason: str = ""
    """Why it did not succeed: ARM's error code and message, or what kept the call from being made."""
    code: str | None = None
    """ARM's error code (`OperationNotAllowed`, `AuthorizationFailed`, ...) or HTTP status, when ARM answered."""
    retry_after_seconds: float | None = None
    """With `throttled` (and a conflict ARM gave one for): ARM's `Retry-After`."""
    retryable: bool = False
    """The same action may be tried again later; otherwise the ladder should move on."""
    state: InstanceState | None = None
    """The instance's state as read after the operation (or by `instance_state`)."""

    @property
    def succeeded(self) -> bool:
        return self.outcome is CloudOutcome.SUCCEEDED

    def summary(self) -> str:
        """One line for an Event or the history annotation: `reboot succeeded`, `reimage conflict: ...`."""
        text = f"{self.action.value} {self.outcome.value}"
        if self.instance is not None:
            text += f" ({self.instance})"
        if self.reason:
            text += f": {self.reason}"
        if self.retry_after_seconds is not None:
            text += f" (retry after {self.retry_after_seconds:g} s)"
        return text
