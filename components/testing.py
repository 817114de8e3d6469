"""Pulumi mocks for testing a program that uses these components, without Azure or a cluster.

`pulumi.runtime.set_mocks(GpuMocks())` before the program runs (see docs/tasks/components.md, "Testing a program
under mocks").
Resources echo their inputs as outputs with the id `<name>-id`. The lookups the components make are answered as
Azure answers them:

* `listManagedClusterAdminCredentials` / `listManagedClusterUserCredentials` (AksCluster, GpuCluster): one base64
  kubeconfig each, `kubeconfig` (a placeholder cluster at `https://aks.invalid:443` unless given);
* `getSubscriptionFeatureRegistration` (the InfiniBand feature, `aks.registerInfinibandFeature`): `feature_state`,
  `Registered` unless given (anything else makes `pulumi up` wait, then fail naming the feature).

Any other call is answered with no fields, as `pulumi.runtime.Mocks` does; a component that needs a field from an
unanswered lookup says which call went unanswered (:class:`~gpu_operator.components.aks_cluster.MissingLookupAnswer`)
instead of failing on a missing value. The project's own tests use richer mocks built the same way
(`tests/support/pulumi_mocks.py`, `tests/support/azure_mocks.py`: recording every registration, modelling a
preview and a slow provider).
"""

from __future__ import annotations

import base64
from typing import Any

import pulumi

__all__ = ["GpuMocks", "PLACEHOLDER_KUBECONFIG", "ADMIN_CREDENTIALS", "USER_CREDENTIALS", "FEATURE_LOOKUP"]

ADMIN_CREDENTIALS = "azure-native:containerservice:listManagedClusterAdminCredentials"
USER_CREDENTIALS = "azure-native:containerservice:listManagedClusterUserCredentials"
FEATURE_LOOKUP = "azure-native:features:getSubscriptionFeatureRegistration"

#: A kubeconfig for a cluster that does not exist (`.invalid` never resolves): nothing under mocks connects to it.
PLACEHOLDER_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: aks
  cluster: {server: "https://aks.invalid:443"}
contexts:
- name: aks
  context: {cluster: aks, user: mock}
current-context: aks
users:
- name: mock
  user: {token: mock-token}
"""


class GpuMocks(pulumi.runtime.Mocks):
    """Echo every resource's inputs; answer the AKS credential and subscription feature lookups."""

    def __init__(self, kubeconfig: str = PLACEHOLDER_KUBECONFIG, feature_state: str = "Registered") -> None:
        self.kubeconfig = kubeconfig
        self.feature_state = feature_state
        self.calls: list[pulumi.runtime.MockCallArgs] = []
        """Every call made, in order, for a test to inspect."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        self.calls.append(args)
        if args.token in (ADMIN_CREDENTIALS, USER_CREDENTIALS):
            encoded = base64.b64encode(self.kubeconfig.encode()).decode()
            return {"kubeconfigs": [{"name": "clusterUser", "value": encoded}]}
        if args.token == FEATURE_LOOKUP:
            name = f"{args.args.get('providerNamespace')}/{args.args.get('featureName')}"
            return {"name": name, "properties": {"state": self.feature_state}}
        return {}
