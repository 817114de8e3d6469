"""Fixtures for the cloud tests: the fake ARM, a credential that never reaches Entra ID, and a transport whose
waits are recorded (and cut short) so every `Retry-After` and poll interval the SDK honours can be asserted."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.core.pipeline.transport import RequestsTransport

from gpu_operator.agents.cloud.azure_vmss import AzureVmss, AzureVmssSettings
from tests.agents.cloud.fake_arm import TOKEN, FakeArm

SUBSCRIPTION = "9b4c2a55-0c3e-4f57-8d1e-3f5a9c0d7e21"
NODE_RESOURCE_GROUP = "MC_rg-gpu_aks-gpu_westeurope"
SCALE_SET = "aks-h100-12345678-vmss"
INSTANCE = "3"
#: As AKS writes it: `resourcegroups` in lower case, the node resource group as created.
PROVIDER_ID = (f"azure:///subscriptions/{SUBSCRIPTION}/resourcegroups/{NODE_RESOURCE_GROUP.lower()}/providers/"
               f"Microsoft.Compute/virtualMachineScaleSets/{SCALE_SET}/virtualMachines/{INSTANCE}")
#: What the SDK asks for: its own spelling of the keywords, the values as the providerID gives them.
INSTANCE_PATH = (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{NODE_RESOURCE_GROUP.lower()}/providers/"
                 f"Microsoft.Compute/virtualMachineScaleSets/{SCALE_SET}/virtualMachines/{INSTANCE}")
POLL_INTERVAL = 0.05


class StaticTokenCredential:
    """A `TokenCredential` that hands out one fixed token and counts the asks (never reaches Entra ID)."""

    def __init__(self) -> None:
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **_: Any) -> AccessToken:
        self.scopes.append(scopes)
        return AccessToken(TOKEN, int(time.time()) + 3600)


class RecordingTransport(RequestsTransport):
    """azure-core's requests transport, recording every wait the retry policy and the poller ask of it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sleeps: list[float] = []

    def sleep(self, duration: float) -> None:
        self.sleeps.append(duration)
        time.sleep(min(duration, 0.01))


@pytest.fixture
def arm(tmp_path: Path) -> Iterator[FakeArm]:
    with FakeArm(tmp_path, {(SUBSCRIPTION, NODE_RESOURCE_GROUP, SCALE_SET, INSTANCE)}) as fake:
        yield fake


@pytest.fixture
def credential() -> StaticTokenCredential:
    return StaticTokenCredential()


@pytest.fixture
def transport(arm: FakeArm) -> RecordingTransport:
    return RecordingTransport(connection_verify=str(arm.ca_file))


@pytest.fixture
def vmss(arm: FakeArm, credential: StaticTokenCredential,
         transport: RecordingTransport) -> Callable[..., AzureVmss]:
    """`AzureVmss` against the fake ARM; keyword arguments override its settings."""

    def make(**settings: Any) -> AzureVmss:
        values = {"resource_manager": arm.url, "polling_interval_seconds": POLL_INTERVAL,
                  "reboot_timeout_seconds": 30.0, "reimage_timeout_seconds": 30.0, **settings}
        return AzureVmss(credential, AzureVmssSettings(**values), transport=transport)

    return make
