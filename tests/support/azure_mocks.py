"""Pulumi mocks for programs that touch Azure: AKS credential lookups, the feature registration, stack references.

`run_azure_program(fn)` is `run_program` with mocks that also answer
`azure-native:containerservice:listManagedClusterAdminCredentials` and `...UserCredentials` (one base64
kubeconfig each, as AKS returns them; the user one in exec format when asked), report the state of a subscription
feature registration (`Registering` for the first `registering_polls` lookups, then `Registered`, or a fixed
`feature_state`), and give `pulumi:pulumi:StackReference` resources the outputs passed in `stack_outputs`, with
the names in `secret_outputs` kept secret as the engine keeps them.

`AzureMocks(preview=True)` models a preview of a first deployment (new resources have no id and no computed
outputs; resources of the type prefixes in `existing` are already in the state, so they are known) and `delays` makes resources of the given type prefixes slow to create (see `tests.support.pulumi_mocks`).
"""

from __future__ import annotations

import base64
import threading
import time
from typing import Any
from collections.abc import Callable, Iterable, Mapping

import pulumi

from tests.support.pulumi_mocks import Recording, RecordingMocks, install_mocks

__all__ = [
    "AzureMocks",
    "run_azure_program",
    "KUBECONFIG",
    "USER_KUBECONFIG",
    "EXEC_KUBECONFIG",
    "ADMIN_CREDENTIALS",
    "USER_CREDENTIALS",
    "FEATURE_LOOKUP",
]

ADMIN_CREDENTIALS = "azure-native:containerservice:listManagedClusterAdminCredentials"
USER_CREDENTIALS = "azure-native:containerservice:listManagedClusterUserCredentials"
FEATURE_LOOKUP = "azure-native:features:getSubscriptionFeatureRegistration"
KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: aks-gpu
  cluster: {server: "https://aks-gpu.hcp.westeurope.azmk8s.io:443"}
contexts:
- name: aks-gpu-admin
  context: {cluster: aks-gpu, user: clusterAdmin}
current-context: aks-gpu-admin
users:
- name: clusterAdmin
  user: {token: mock-token}
"""
USER_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: aks-gpu
  cluster: {server: "https://aks-gpu.hcp.westeurope.azmk8s.io:443"}
contexts:
- name: aks-gpu
  context: {cluster: aks-gpu, user: clusterUser}
current-context: aks-gpu
users:
- name: clusterUser
  user: {token: mock-user-token}
"""
EXEC_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: aks-gpu
  cluster: {server: "https://aks-gpu.hcp.westeurope.azmk8s.io:443"}
contexts:
- name: aks-gpu
  context: {cluster: aks-gpu, user: clusterUser_rg-gpu_aks-gpu}
current-context: aks-gpu
users:
- name: clusterUser_rg-gpu_aks-gpu
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: kubelogin
      args: [get-token, --environment, AzurePublicCloud, --server-id, 6dae42f8-4368-4678-94ff-3960e28e3630,
             --client-id, 80faf920-1908-4b52-b5ef-a8e7bedfc67a, --tenant-id, 00000000-0000-0000-0000-000000000000,
             --login, devicecode]
      interactiveMode: IfAvailable
"""


def _credential(name: str, kubeconfig: str) -> dict[str, Any]:
    return {"kubeconfigs": [{"name": name, "value": base64.b64encode(kubeconfig.encode()).decode()}]}


class AzureMocks(RecordingMocks):
    """RecordingMocks that also answer AKS credential and feature lookups and stack references."""

    def __init__(
        self,
        stack_outputs: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        secret_outputs: Iterable[str] = (),
        preview: bool = False,
        delays: Mapping[str, float] | None = None,
        registering_polls: int = 0,
        feature_state: str | None = None,
        existing: Iterable[str] = (),
    ) -> None:
        self.stack_outputs = dict(stack_outputs or {})
        self.secret_outputs = list(secret_outputs)
        self.preview = preview
        self.delays = dict(delays or {})
        self.registering_polls = registering_polls
        self.feature_state = feature_state
        self.existing = tuple(existing)
        self.calls: list[pulumi.runtime.MockCallArgs] = []
        self._lock = threading.Lock()

    def _feature_state(self) -> str:
        if self.feature_state is not None:
            return self.feature_state
        polls = sum(1 for call in self.calls if call.token == FEATURE_LOOKUP)
        return "Registering" if polls <= self.registering_polls else "Registered"

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        with self._lock:
            self.calls.append(args)
            if args.token == ADMIN_CREDENTIALS:
                return _credential("clusterAdmin", KUBECONFIG)
            if args.token == USER_CREDENTIALS:
                exec_format = args.args.get("format") == "exec"
                return _credential("clusterUser", EXEC_KUBECONFIG if exec_format else USER_KUBECONFIG)
            if args.token == FEATURE_LOOKUP:
                name = f"{args.args['providerNamespace']}/{args.args['featureName']}"
                return {"name": name, "properties": {"state": self._feature_state()}}
        return {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == "pulumi:pulumi:StackReference":
            name = args.inputs["name"]
            return name, {"name": name, "outputs": dict(self.stack_outputs[name]),
                          "secretOutputNames": self.secret_outputs}
        for prefix, seconds in self.delays.items():
            if args.typ.startswith(prefix):
                time.sleep(seconds)
                break
        if self.preview and not args.typ.startswith(("pulumi:", *self.existing)):
            return "", dict(args.inputs)
        state = dict(args.inputs)
        if args.typ == "azure-native:features:SubscriptionFeatureRegistration":
            state["properties"] = {"state": "Registering"}
        return f"{args.name}-id", state


def run_azure_program(
    program: Callable[[], Any],
    *,
    project: str = "gpu-operator",
    stack: str = "test",
    config: dict[str, str] | None = None,
    recording: Recording | None = None,
    mocks: AzureMocks | None = None,
) -> Recording:
    """Run `program` under AzureMocks and return what it registered (pass `recording` to keep it on error)."""
    recording = recording if recording is not None else Recording()
    mocks = mocks if mocks is not None else AzureMocks()
    install_mocks(mocks, recording, project=project, stack=stack, preview=mocks.preview)
    pulumi.runtime.set_all_config(config or {})
    try:
        @pulumi.runtime.test
        def _run() -> Any:
            return program()

        _run()
    finally:
        pulumi.runtime.set_all_config({})
    return recording
