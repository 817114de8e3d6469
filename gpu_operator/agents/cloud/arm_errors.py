"""How an Azure SDK error becomes a :class:`~gpu_operator.agents.cloud.result.CloudResult`: one table, no guessing.

ARM answers a refused request with an HTTP status and a body `{"error": {"code", "message"}}`; a long-running
operation that fails reports the same error in its status document (`{"status": "Failed", "error": {...}}`), which
azure-core raises as an `HttpResponseError` on the 200 of the status poll. The outcome is chosen by ARM's error code
where one means more than its status (a newer operation preempting ours is a conflict, not a failure), otherwise by
the status: 429 throttled, 409 conflict, 401/403/404 failures the ladder moves on from, 5xx failures worth trying
again. Errors raised before ARM answered (no connection, no token) are failures with what went wrong.

Imports the SDK: reached only through :mod:`gpu_operator.agents.cloud.azure_vmss`.
"""

from __future__ import annotations

import email.utils
import time

from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ServiceRequestError,
    ServiceResponseError,
)

from gpu_operator.agents.cloud.provider_id import VmssInstance
from gpu_operator.agents.cloud.result import CloudAction, CloudOutcome, CloudResult

__all__ = ["from_error", "retry_after_seconds"]

#: ARM error code → (outcome, retryable), where the code says more than the status.
_BY_CODE: dict[str, tuple[CloudOutcome, bool]] = {
    "OperationPreempted": (CloudOutcome.CONFLICT, True),
    "TooManyRequests": (CloudOutcome.THROTTLED, True),
}
#: HTTP status → (outcome, retryable).
_BY_STATUS: dict[int, tuple[CloudOutcome, bool]] = {
    429: (CloudOutcome.THROTTLED, True),
    409: (CloudOutcome.CONFLICT, True),
    401: (CloudOutcome.FAILED, False),
    403: (CloudOutcome.FAILED, False),
    404: (CloudOutcome.FAILED, False),
}
#: What to add to the reason, by status: the fix an operator needs.
_HINTS = {
    403: "the controller's identity lacks the right: the stack grants it with remediation.cloud.provider: azure",
    404: "the scale set instance no longer exists: the node was deleted or scaled in",
}


def retry_after_seconds(value: str | None) -> float | None:
    """A `Retry-After` header in seconds (delta-seconds or an HTTP date), None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _code_and_message(error: HttpResponseError) -> tuple[str | None, str]:
    odata = error.error
    if odata is not None and odata.code:
        return str(odata.code), str(odata.message or "").strip()
    return None, (error.reason or str(error.message or "")).strip()


def _from_http(action: CloudAction, instance: VmssInstance | None, error: HttpResponseError) -> CloudResult:
    status = error.status_code
    code, message = _code_and_message(error)
    outcome, retryable = _BY_CODE.get(code or "") or _BY_STATUS.get(status or 0) or (
        CloudOutcome.FAILED, status is not None and status >= 500)
    reason = f"{code or f'HTTP {status}'}: {message}" if message else (code or f"HTTP {status}")
    if status in _HINTS:
        reason += f"; {_HINTS[status]}"
    retry_after = None
    if error.response is not None:
        retry_after = retry_after_seconds(error.response.headers.get("Retry-After"))
    return CloudResult(action, outcome, instance, reason=reason, code=code or (str(status) if status else None),
                       retry_after_seconds=retry_after, retryable=retryable)


def from_error(action: CloudAction, instance: VmssInstance | None, error: Exception) -> CloudResult:
    """The result an SDK error means."""
    if isinstance(error, HttpResponseError) and (error.status_code is not None or error.error is not None):
        return _from_http(action, instance, error)
    if isinstance(error, ClientAuthenticationError):
        return CloudResult(action, CloudOutcome.FAILED, instance,
                           reason=f"no Azure token for the controller's identity: {error.message}")
    if isinstance(error, (ServiceRequestError, ServiceResponseError)):
        return CloudResult(action, CloudOutcome.FAILED, instance, reason=f"Azure Resource Manager unreachable: "
                           f"{error.message}", retryable=True)
    if isinstance(error, AzureError):
        return CloudResult(action, CloudOutcome.FAILED, instance, reason=str(error.message))
    raise error
