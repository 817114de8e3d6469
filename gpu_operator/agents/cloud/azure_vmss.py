"""Reboot and reimage the Azure scale set instance behind a Node, waiting on Azure's long-running operation.

`AzureVmss.reboot(provider_id)` and `AzureVmss.reimage(provider_id)` call the VMSS VM API of azure-mgmt-compute
(`virtual_machine_scale_set_vms.begin_restart` / `begin_reimage`: POST `.../virtualMachines/<id>/restart` or
`/reimage`) for the instance the Node's `spec.providerID` names, in that providerID's subscription, and wait on the
operation ARM returns (202 with `Azure-AsyncOperation`/`Location`) through the SDK's own poller, which honours
ARM's `Retry-After` between polls. The wait is bounded (`reboot_timeout_seconds`, `reimage_timeout_seconds`): past
it the call returns `timed-out` and the poller stops at its next poll, so no thread is left polling. A reimage
puts the OS disk back to the scale set model's image (AKS's node image), losing what was written to it; the GPU
driver is the operator's and comes back with its DaemonSet. After the operation the instance view is read
(`ProvisioningState/...`, `PowerState/...`), and `instance_state` reads it on its own, for a controller that takes
over mid-stage and must tell an operation still running from one that ended, instead of asking twice.

Throttling: ARM's 429 carries `Retry-After`. A request is retried up to `retries` times, each after the wait ARM
asked for, as long as that wait is at most `max_retry_after_seconds`; a longer one ends the call at once as
`throttled` with ARM's `Retry-After`, so a worker is never parked for minutes and the planner requeues at the
right time. 5xx answers and lost connections are retried the same way (azure-core's retry policy).

Where NVIDIA's NVSentinel differs (janitor-provider/pkg/csp/azure/azure.go, `SendRebootSignal` and
`IsNodeReady`): it starts `BeginRestart` without waiting on the poller, then looks at the instance only after a
fixed five minutes, takes `ProvisioningState/succeeded` for done, and offers no reimage.

The API version is pinned (:data:`COMPUTE_API_VERSION`), not left to whatever SDK release is installed, so the
requests Azure sees change only when this file does. The SDK is imported with this module, which nothing imports
before a cloud action is configured.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from azure.core.credentials import TokenCredential
from azure.core.exceptions import AzureError
from azure.core.pipeline.policies import RetryPolicy
from azure.core.polling import LROPoller
from azure.mgmt.compute import ComputeManagementClient
from azure.mgmt.core.polling.arm_polling import ARMPolling

from gpu_operator.agents.cloud.arm_errors import from_error
from gpu_operator.agents.cloud.credential import CredentialSetupError, workload_identity_credential
from gpu_operator.agents.cloud.provider_id import ProviderIdError, VmssInstance, parse_provider_id
from gpu_operator.agents.cloud.result import CloudAction, CloudOutcome, CloudResult, InstanceState

__all__ = ["AzureVmss", "AzureVmssSettings", "COMPUTE_API_VERSION", "PUBLIC_CLOUD"]

_LOG = logging.getLogger(__name__)

#: The Microsoft.Compute REST API version every request names.
COMPUTE_API_VERSION = "2024-11-01"
#: Azure Resource Manager of the public cloud.
PUBLIC_CLOUD = "https://management.azure.com"


@dataclass(frozen=True)
class AzureVmssSettings:
    """How long and how hard to try; defaults sized for GPU VMs (a reimage of an ND-series node takes minutes)."""

    reboot_timeout_seconds: float = 1200
    reimage_timeout_seconds: float = 2700
    polling_interval_seconds: float = 15
    """Between polls of an operation when ARM's answer names no `Retry-After`."""
    retries: int = 4
    """Per request, for throttling, server errors and lost connections."""
    max_retry_after_seconds: float = 60
    """The longest `Retry-After` waited out within a call; a longer one ends it as `throttled`."""
    resource_manager: str = PUBLIC_CLOUD
    """ARM's endpoint (another for a sovereign cloud); the token is asked for `<endpoint>/.default`."""
    api_version: str = COMPUTE_API_VERSION


class _OperationTimedOut(Exception):
    """The bound of the wait passed while the operation was still running."""


class _BoundedPolling(ARMPolling):
    """ARM's poller, which stops at its next poll once the deadline has passed."""

    def __init__(self, interval: float, deadline: float, endpoint: str) -> None:
        super().__init__(interval, path_format_arguments={"endpoint": endpoint})
        self._deadline = deadline

    def update_status(self) -> None:
        if time.monotonic() >= self._deadline:
            raise _OperationTimedOut(f"still {self.status()} at the deadline")
        super().update_status()


class _ThrottleBoundRetry(RetryPolicy):
    """azure-core's retry policy, except that a `Retry-After` longer than the bound is not waited out."""

    def __init__(self, max_retry_after: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._max_retry_after = max_retry_after

    def is_retry(self, settings: dict[str, Any], response: Any) -> bool:
        retry_after = self.get_retry_after(response)
        if retry_after is not None and retry_after > self._max_retry_after:
            return False
        return super().is_retry(settings, response)


def _instance_state(view: Any) -> InstanceState:
    """Power and provisioning state from an instance view's status codes."""
    found: dict[str, str] = {}
    for status in getattr(view, "statuses", None) or ():
        kind, _, value = str(status.code or "").partition("/")
        found.setdefault(kind.lower(), value.lower())
    return InstanceState(provisioning=found.get("provisioningstate"), power=found.get("powerstate"))


class AzureVmss:
    """Reboot, reimage and read the scale set instance behind a Node (thread-safe: one client per subscription)."""

    def __init__(self, credential: TokenCredential | None = None, settings: AzureVmssSettings | None = None,
                 **client_options: Any) -> None:
        """`credential` defaults to the pod's workload identity (made on first use). `client_options` go to
        `ComputeManagementClient` as they are (a transport, `connection_verify`, timeouts)."""
        self._credential = credential
        self._settings = settings or AzureVmssSettings()
        self._client_options = client_options
        self._clients: dict[str, ComputeManagementClient] = {}
        self._lock = threading.Lock()

    @property
    def settings(self) -> AzureVmssSettings:
        return self._settings

    def reboot(self, provider_id: str) -> CloudResult:
        """Restart the instance and wait for Azure to report it done (bounded by `reboot_timeout_seconds`)."""
        return self._operation(CloudAction.REBOOT, provider_id, self._settings.reboot_timeout_seconds)

    def reimage(self, provider_id: str) -> CloudResult:
        """Reimage the instance's OS disk and wait for it (bounded by `reimage_timeout_seconds`)."""
        return self._operation(CloudAction.REIMAGE, provider_id, self._settings.reimage_timeout_seconds)

    def instance_state(self, provider_id: str) -> CloudResult:
        """The instance's power and provisioning state (`succeeded` with `state`), or why it could not be read."""
        action = CloudAction.READ_STATE
        try:
            instance = parse_provider_id(provider_id)
        except ProviderIdError as error:
            return CloudResult(action, CloudOutcome.FAILED, reason=str(error))
        try:
            state = self._read_state(instance)
        except (AzureError, CredentialSetupError) as error:
            return self._failure(action, instance, error)
        return CloudResult(action, CloudOutcome.SUCCEEDED, instance, state=state)

    # --- the calls ------------------------------------------------------------------------------------------------

    def _operation(self, action: CloudAction, provider_id: str, timeout: float) -> CloudResult:
        try:
            instance = parse_provider_id(provider_id)
        except ProviderIdError as error:
            return CloudResult(action, CloudOutcome.FAILED, reason=str(error))
        deadline = time.monotonic() + timeout
        try:
            poller = self._begin(action, instance, deadline)
            poller.wait(timeout=max(0.0, deadline - time.monotonic()))
            if not poller.done():
                raise _OperationTimedOut("the wait's bound passed")
            poller.result()  # the poller has ended: this raises what it ended with, however late
        except _OperationTimedOut:
            result = CloudResult(action, CloudOutcome.TIMED_OUT, instance,
                                 reason=f"Azure had not finished the operation after {timeout:g} s; it may still "
                                        "finish: read the instance state before asking again")
            _LOG.warning("%s", result.summary())
            return result
        except (AzureError, CredentialSetupError) as error:
            return self._failure(action, instance, error)
        result = CloudResult(action, CloudOutcome.SUCCEEDED, instance, state=self._state_after(instance))
        _LOG.info("%s", result.summary())
        return result

    def _begin(self, action: CloudAction, instance: VmssInstance, deadline: float) -> LROPoller[None]:
        settings = self._settings
        vms = self._client(instance.subscription).virtual_machine_scale_set_vms
        begin: Callable[..., LROPoller[None]] = vms.begin_restart if action is CloudAction.REBOOT else vms.begin_reimage
        polling = _BoundedPolling(settings.polling_interval_seconds, deadline, settings.resource_manager)
        return begin(instance.resource_group, instance.scale_set, instance.instance_id,
                     api_version=settings.api_version, polling=polling)

    def _read_state(self, instance: VmssInstance) -> InstanceState:
        view = self._client(instance.subscription).virtual_machine_scale_set_vms.get_instance_view(
            instance.resource_group, instance.scale_set, instance.instance_id, api_version=self._settings.api_version)
        return _instance_state(view)

    def _state_after(self, instance: VmssInstance) -> InstanceState | None:
        """The state after a finished operation; a failed read does not undo the operation's success."""
        try:
            return self._read_state(instance)
        except AzureError as error:
            _LOG.warning("%s: the instance view could not be read after the operation: %s", instance, error)
            return None

    def _failure(self, action: CloudAction, instance: VmssInstance,
                 error: AzureError | CredentialSetupError) -> CloudResult:
        if isinstance(error, CredentialSetupError):
            result = CloudResult(action, CloudOutcome.FAILED, instance, reason=str(error))
        else:
            result = from_error(action, instance, error)
        _LOG.warning("%s", result.summary())
        return result

    # --- clients --------------------------------------------------------------------------------------------------

    def _client(self, subscription: str) -> ComputeManagementClient:
        with self._lock:
            client = self._clients.get(subscription)
            if client is None:
                if self._credential is None:
                    self._credential = workload_identity_credential()
                client = self._clients[subscription] = self._new_client(self._credential, subscription)
            return client

    def _new_client(self, credential: TokenCredential, subscription: str) -> ComputeManagementClient:
        settings = self._settings
        endpoint = settings.resource_manager.rstrip("/")
        retry = _ThrottleBoundRetry(settings.max_retry_after_seconds, retry_total=settings.retries)
        options = {"retry_policy": retry, "polling_interval": settings.polling_interval_seconds,
                   **self._client_options}
        return ComputeManagementClient(credential, subscription, base_url=endpoint,
                                       credential_scopes=[f"{endpoint}/.default"], **options)
