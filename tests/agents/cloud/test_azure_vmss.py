"""AzureVmss against the fake ARM: the requests Azure would see, the waits the SDK honours, and each typed result.

Facts from Azure's REST API for Microsoft.Compute (VirtualMachineScaleSetVMs Restart / Reimage / Get Instance
View): a POST to the instance's `restart` or `reimage` answers 202 with `Azure-AsyncOperation` and `Location`; the
operation's status document goes `InProgress` → `Succeeded` / `Failed` (with an ARM error); throttling is 429 with
`Retry-After`; a conflicting operation is 409. Where NVIDIA's NVSentinel does otherwise
(janitor-provider/pkg/csp/azure/azure.go: `SendRebootSignal` starts the restart and returns; `IsNodeReady` looks
only after a fixed five minutes) these tests pin that we wait on the operation itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from gpu_operator.agents.cloud import CloudAction, CloudOutcome, InstanceState
from gpu_operator.agents.cloud.azure_vmss import COMPUTE_API_VERSION, AzureVmss
from tests.agents.cloud.conftest import (
    INSTANCE,
    INSTANCE_PATH,
    NODE_RESOURCE_GROUP,
    POLL_INTERVAL,
    PROVIDER_ID,
    SCALE_SET,
    SUBSCRIPTION,
    RecordingTransport,
    StaticTokenCredential,
)
from tests.agents.cloud.fake_arm import FakeArm

OPERATIONS = f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Compute/locations/westeurope/operations/"


def _route(arm: FakeArm) -> list[tuple[str, str]]:
    """Each request as (method, what it addressed), the operation's id left out."""
    routes = []
    for request in arm.requests:
        if request.path.startswith(OPERATIONS):
            routes.append((request.method, "operation monitor" if "monitor" in request.query else "operation"))
        else:
            routes.append((request.method, request.path.removeprefix(INSTANCE_PATH) or "instance"))
    return routes


@pytest.mark.parametrize(("action", "verb"), [(CloudAction.REBOOT, "restart"), (CloudAction.REIMAGE, "reimage")])
def test_an_accepted_operation_is_waited_on_until_azure_reports_it_done(
        arm: FakeArm, vmss: Callable[..., AzureVmss], transport: RecordingTransport,
        credential: StaticTokenCredential, action: CloudAction, verb: str) -> None:
    arm.accept(verb, polls=2)
    repair = vmss()
    result = repair.reboot(PROVIDER_ID) if action is CloudAction.REBOOT else repair.reimage(PROVIDER_ID)
    assert result.outcome is CloudOutcome.SUCCEEDED and result.action is action
    assert (result.instance.subscription, result.instance.resource_group, result.instance.scale_set,
            result.instance.instance_id) == (SUBSCRIPTION, NODE_RESOURCE_GROUP.lower(), SCALE_SET, INSTANCE)
    # the POST, the status polled until it is no longer InProgress, the final GET on Location, the instance view
    assert _route(arm) == [("POST", f"/{verb}"), ("GET", "operation"), ("GET", "operation"), ("GET", "operation"),
                           ("GET", "operation monitor"), ("GET", "/instanceView")]
    assert {r.api_version for r in arm.requests} == {COMPUTE_API_VERSION}
    assert all(r.headers["authorization"] == "Bearer fake-arm-token" for r in arm.requests)
    assert transport.sleeps == [POLL_INTERVAL] * 2  # no Retry-After on the status: the configured interval
    assert result.state == InstanceState(provisioning="succeeded", power="running")
    assert credential.scopes and set(credential.scopes) == {(f"{arm.url}/.default",)}


def test_polling_honours_the_retry_after_of_the_operation_status(
        arm: FakeArm, vmss: Callable[..., AzureVmss], transport: RecordingTransport) -> None:
    arm.accept("restart", polls=2, poll_retry_after=7)
    assert vmss().reboot(PROVIDER_ID).outcome is CloudOutcome.SUCCEEDED
    assert transport.sleeps == [7.0, 7.0]


def test_throttling_is_waited_out_as_retry_after_asks_then_the_operation_goes_on(
        arm: FakeArm, vmss: Callable[..., AzureVmss], transport: RecordingTransport) -> None:
    arm.throttle("restart", retry_after=5, times=2)
    arm.accept("restart", polls=0)
    result = vmss().reboot(PROVIDER_ID)
    assert result.outcome is CloudOutcome.SUCCEEDED
    assert [m for m, _ in _route(arm)].count("POST") == 3
    assert transport.sleeps[:2] == [5.0, 5.0]


def test_throttling_that_outlasts_the_retries_is_throttled_with_azures_retry_after(
        arm: FakeArm, vmss: Callable[..., AzureVmss], transport: RecordingTransport) -> None:
    arm.throttle("reimage", retry_after=3, times=5)
    result = vmss(retries=2).reimage(PROVIDER_ID)
    assert result.outcome is CloudOutcome.THROTTLED and result.retryable
    assert result.retry_after_seconds == 3.0 and result.code == "TooManyRequests"
    assert _route(arm) == [("POST", "/reimage")] * 3
    assert transport.sleeps == [3.0, 3.0]


def test_a_retry_after_longer_than_the_bound_ends_the_call_at_once(
        arm: FakeArm, vmss: Callable[..., AzureVmss], transport: RecordingTransport) -> None:
    arm.throttle("restart", retry_after=900)
    result = vmss(max_retry_after_seconds=60).reboot(PROVIDER_ID)
    assert result.outcome is CloudOutcome.THROTTLED and result.retry_after_seconds == 900.0
    assert _route(arm) == [("POST", "/restart")] and transport.sleeps == []
    assert "retry after 900 s" in result.summary()


def test_a_conflict_is_reported_not_retried(arm: FakeArm, vmss: Callable[..., AzureVmss],
                                            transport: RecordingTransport) -> None:
    message = "Operation 'restart' is not allowed since another operation is in progress on the instance."
    arm.conflict("restart", "OperationNotAllowed", message)
    result = vmss().reboot(PROVIDER_ID)
    assert result.outcome is CloudOutcome.CONFLICT and result.retryable
    assert result.code == "OperationNotAllowed" and result.reason == f"OperationNotAllowed: {message}"
    assert _route(arm) == [("POST", "/restart")] and transport.sleeps == []


def test_an_operation_preempted_by_a_newer_one_is_a_conflict(arm: FakeArm, vmss: Callable[..., AzureVmss]) -> None:
    arm.accept("restart", polls=1, end="Canceled", end_error={
        "code": "OperationPreempted", "message": "Operation execution has been preempted by a more recent operation."})
    result = vmss().reboot(PROVIDER_ID)
    assert result.outcome is CloudOutcome.CONFLICT and result.code == "OperationPreempted"


def test_a_failed_operation_is_failed_with_azures_error(arm: FakeArm, vmss: Callable[..., AzureVmss]) -> None:
    arm.accept("reimage", polls=1, end="Failed", end_error={
        "code": "VMAgentStatusCommunicationError", "message": "VM has reported a failure when processing extension."})
    result = vmss().reimage(PROVIDER_ID)
    assert result.outcome is CloudOutcome.FAILED and not result.retryable
    assert result.reason == "VMAgentStatusCommunicationError: VM has reported a failure when processing extension."
    assert ("GET", "operation monitor") not in _route(arm)  # a failed operation has no final GET


def _pollers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("LROPoller(")]


def test_an_operation_that_never_finishes_times_out_and_leaves_nothing_polling(
        arm: FakeArm, vmss: Callable[..., AzureVmss]) -> None:
    arm.accept("reimage", polls=None)
    result = vmss(reimage_timeout_seconds=0.3).reimage(PROVIDER_ID)
    assert result.outcome is CloudOutcome.TIMED_OUT and not result.retryable
    assert "read the instance state before asking again" in result.reason
    for poller in _pollers():
        poller.join(timeout=60)  # it stops at its next poll; a loaded machine may be slow to get there
    assert not _pollers(), "the SDK's poller kept running after the call returned"
    settled = len(arm.requests)
    assert settled >= 3 and _route(arm)[0] == ("POST", "/reimage")
    assert {route for route in _route(arm)[1:]} == {("GET", "operation")}
    state = vmss().instance_state(PROVIDER_ID)  # what a controller taking over mid-stage reads
    assert state.outcome is CloudOutcome.SUCCEEDED and state.state is not None and state.state.busy


@pytest.mark.parametrize(("status", "code", "retryable", "hint"), [
    (403, "AuthorizationFailed", False, "the stack grants it with remediation.cloud.provider: azure"),
    (500, "InternalServerError", True, ""),
])
def test_refusals_are_failures_with_their_reason(arm: FakeArm, vmss: Callable[..., AzureVmss], status: int, code: str,
                                                 retryable: bool, hint: str) -> None:
    message = "The client does not have authorization to perform action 'restart/action'." if status == 403 else "x"
    for _ in range(2):
        arm.fail_with("restart", status, code, message)
    result = vmss(retries=1).reboot(PROVIDER_ID)
    assert result.outcome is CloudOutcome.FAILED and result.retryable is retryable and result.code == code
    assert result.reason.startswith(f"{code}: {message}") and hint in result.reason


def test_an_instance_that_no_longer_exists_is_failed(arm: FakeArm, vmss: Callable[..., AzureVmss]) -> None:
    result = vmss().reboot(PROVIDER_ID.removesuffix(f"/{INSTANCE}") + "/9")
    assert result.outcome is CloudOutcome.FAILED and result.code == "ResourceNotFound"
    assert "no longer exists" in result.reason and not result.retryable


def test_a_provider_id_that_names_no_instance_fails_before_any_request(
        arm: FakeArm, vmss: Callable[..., AzureVmss]) -> None:
    result = vmss().reboot("kwok://gpu-node-1")
    assert result.outcome is CloudOutcome.FAILED and result.instance is None
    assert "not an Azure machine" in result.reason
    assert arm.requests == []


def test_instance_state_reads_power_and_provisioning_state(arm: FakeArm, vmss: Callable[..., AzureVmss]) -> None:
    arm.state = {"provisioning": "succeeded", "power": "deallocated"}
    result = vmss().instance_state(PROVIDER_ID)
    assert result.action is CloudAction.READ_STATE and result.outcome is CloudOutcome.SUCCEEDED
    assert result.state == InstanceState("succeeded", "deallocated") and not result.state.running
    assert _route(arm) == [("GET", "/instanceView")]


def test_without_a_workload_identity_the_call_fails_naming_the_fix(arm: FakeArm, monkeypatch: pytest.MonkeyPatch,
                                                                    transport: RecordingTransport) -> None:
    from gpu_operator.agents.cloud.azure_vmss import AzureVmssSettings

    for name in ("AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    result = AzureVmss(settings=AzureVmssSettings(resource_manager=arm.url), transport=transport).reboot(PROVIDER_ID)
    assert result.outcome is CloudOutcome.FAILED
    assert "azure.workload.identity/client-id" in result.reason and "AZURE_FEDERATED_TOKEN_FILE" in result.reason
    assert arm.requests == []


def test_each_subscription_is_addressed_as_its_providerid_says(tmp_path, credential: StaticTokenCredential) -> None:
    other = "0f0f0f0f-1111-2222-3333-444444444444"
    instances = {(SUBSCRIPTION, NODE_RESOURCE_GROUP, SCALE_SET, INSTANCE), (other, "mc_other", "aks-a100-vmss", "0")}
    from gpu_operator.agents.cloud.azure_vmss import AzureVmssSettings

    with FakeArm(tmp_path, instances) as arm:
        repair = AzureVmss(credential, AzureVmssSettings(resource_manager=arm.url, polling_interval_seconds=0.01),
                           transport=RecordingTransport(connection_verify=str(arm.ca_file)))
        other_id = (f"azure:///subscriptions/{other}/resourceGroups/mc_other/providers/Microsoft.Compute/"
                    "virtualMachineScaleSets/aks-a100-vmss/virtualMachines/0")
        assert repair.reboot(other_id).succeeded and repair.reboot(PROVIDER_ID).succeeded
        posts = [r.path for r in arm.requests if r.method == "POST"]
    assert [p.split("/")[2] for p in posts] == [other, SUBSCRIPTION]
