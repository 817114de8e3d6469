"""Pulumi mocks for programs that touch Azure: the AKS admin-credential lookup and stack references.

`run_azure_program(fn)` is `run_program` with mocks that also answer
`azure-native:containerservice:listManagedClusterAdminCredentials` (one base64 kubeconfig, as AKS returns it) and
give `pulumi:pulumi:StackReference` resources the outputs passed in `stack_outputs`.
"""

from __future__ import annotations

import base64
from typing import Any
from collections.abc import Callable, Mapping

import pulumi

from tests.support.pulumi_mocks import Recording, RecordingMocks, _RecordingMonitor

__all__ = ["AzureMocks", "run_azure_program", "KUBECONFIG", "ADMIN_CREDENTIALS"]

ADMIN_CREDENTIALS = "azure-native:containerservice:listManagedClusterAdminCredentials"
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


class AzureMocks(RecordingMocks):
    """RecordingMocks that also answer the AKS credential lookup and stack references."""

    def __init__(self, stack_outputs: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.stack_outputs = dict(stack_outputs or {})
        self.calls: list[pulumi.runtime.MockCallArgs] = []

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        self.calls.append(args)
        if args.token == ADMIN_CREDENTIALS:
            value = base64.b64encode(KUBECONFIG.encode()).decode()
            return {"kubeconfigs": [{"name": "clusterAdmin", "value": value}]}
        return {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        if args.typ == "pulumi:pulumi:StackReference":
            name = args.inputs["name"]
            return name, {"name": name, "outputs": dict(self.stack_outputs[name]), "secretOutputNames": []}
        return super().new_resource(args)


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
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False,
                             monitor=_RecordingMonitor(mocks, recording))
    pulumi.runtime.set_all_config(config or {})
    try:
        @pulumi.runtime.test
        def _run() -> Any:
            return program()

        _run()
    finally:
        pulumi.runtime.set_all_config({})
    return recording
