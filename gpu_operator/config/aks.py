"""The `aks` section: which AKS cluster the GPU pools join, and whether this stack creates it.

```yaml
aks:
  resourceGroup: rg-gpu-prod        # the cluster's resource group
  clusterName: aks-gpu-prod         # an existing cluster, or the one to create
  kubernetesVersion: "1.34"         # decides the node image's Ubuntu release (and the version of a new cluster)
  create: false                     # true: create the cluster (managed identity, OIDC issuer, workload identity)
  location: westeurope              # required with create
  systemPool: {vmSize: Standard_D4ds_v5, count: 2}   # the new cluster's system pool
  registerInfinibandFeature: false  # register AKSInfinibandSupport in the subscription (for IB pools)
  tags: {costCenter: ml}            # tags of the new cluster and of every GPU pool
  credentials: admin                # how this program signs in to the cluster: admin | user | exec
  kubeloginMode: azurecli           # with credentials exec: kubelogin's --login method
  protect: true                     # the engine refuses to delete or replace the created cluster and GPU pools
```

Credentials (all kept secret in state and outputs):

* `admin`: `listClusterAdminCredential`, the cluster's local admin account. It fails on clusters with local
  accounts disabled (Entra ID only, `disableLocalAccounts`);
* `user`: `listClusterUserCredential` as AKS returns it;
* `exec`: `listClusterUserCredential` in `exec` format: kubelogin signs in with Entra ID, and this program's
  identity needs a Kubernetes role that may create the operands (cluster-wide RBAC, DaemonSets, ...).
  `kubeloginMode` picks kubelogin's login method (default `azurecli`: the identity of `az login`, which also
  covers a CI job's OIDC login); AKS's own default (`devicecode`) would wait for a person at a browser.

Whatever `credentials` says, the kubeconfig a stack exports for its consumers is the user credential in exec
format, never the admin one: on Entra ID clusters every consumer signs in as itself.
"""

from __future__ import annotations

import re
from typing import Any, Literal
from collections.abc import Mapping

from pydantic import Field, ValidationError, ValidationInfo, field_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.errors import ConfigError, problems_from_validation_error
from gpu_operator.config.pools import (
    Zone,
    check_kubernetes_version,
    check_pool_name,
    check_tags,
    check_zones,
    zone_strings,
)

__all__ = ["AksSpec", "Credentials", "KubeloginMode", "SystemPool", "check_resource_group", "parse_aks"]

Credentials = Literal["admin", "user", "exec"]
#: kubelogin's `--login` methods.
KubeloginMode = Literal["azurecli", "workloadidentity", "spn", "msi", "devicecode", "interactive", "azd"]

_RESOURCE_GROUP = re.compile(r"^[-\w._()]{1,90}\Z")
_CLUSTER_NAME = re.compile(r"^[a-zA-Z0-9]\Z|^[a-zA-Z0-9][-_a-zA-Z0-9]{0,61}[a-zA-Z0-9]\Z")
_DNS_PREFIX = re.compile(r"^[a-zA-Z0-9]\Z|^[a-zA-Z0-9][-a-zA-Z0-9]{0,52}[a-zA-Z0-9]\Z")


def check_resource_group(value: str) -> str:
    """An Azure resource group name (1-90 letters, digits, '-', '_', '.', '(', ')', not ending in '.')."""
    if not _RESOURCE_GROUP.match(value) or value.endswith("."):
        raise ValueError(f"{value!r} is not a resource group name (1-90 letters, digits, '-', '_', '.', '(', ')')")
    return value


class SystemPool(ConfigModel):
    """The system pool of a cluster this stack creates (it runs CoreDNS, NFD's master, no GPU work)."""

    name: str = "system"
    vm_size: str = Field(default="Standard_D4ds_v5", min_length=1)
    count: int = Field(default=2, ge=1, le=1000)
    availability_zones: tuple[Zone, ...] = ()

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_pool_name(value)

    @field_validator("availability_zones", mode="before")
    @classmethod
    def _zone_strings(cls, value: Any) -> Any:
        return zone_strings(value)

    @field_validator("availability_zones")
    @classmethod
    def _zones_once(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return check_zones(values)


class AksSpec(ConfigModel):
    """The AKS cluster the GPU pools belong to."""

    resource_group: str
    cluster_name: str
    kubernetes_version: str | None = None
    create: bool = False
    location: str | None = None
    dns_prefix: str | None = Field(default=None, description="default: the cluster name")
    system_pool: SystemPool = SystemPool()
    register_infiniband_feature: bool = False
    tags: dict[str, str] = {}
    credentials: Credentials = "admin"
    kubelogin_mode: KubeloginMode | None = Field(default=None, description="with credentials exec; default azurecli")
    protect: bool = True

    @field_validator("resource_group")
    @classmethod
    def _resource_group(cls, value: str) -> str:
        return check_resource_group(value)

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, value: str) -> str:
        if not _CLUSTER_NAME.match(value):
            raise ValueError(f"{value!r} is not an AKS cluster name (1-63 letters, digits, '-', '_')")
        return value

    @field_validator("dns_prefix")
    @classmethod
    def _dns_prefix(cls, value: str | None) -> str | None:
        if value is not None and not _DNS_PREFIX.match(value):
            raise ValueError(f"{value!r} is not a DNS prefix (1-54 letters, digits and '-')")
        return value

    @field_validator("kubernetes_version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        return check_kubernetes_version(value)

    @field_validator("tags")
    @classmethod
    def _tags(cls, values: dict[str, str]) -> dict[str, str]:
        return check_tags(values)

    @field_validator("kubelogin_mode")
    @classmethod
    def _kubelogin_needs_exec(cls, value: str | None, info: ValidationInfo) -> str | None:
        credentials = info.data.get("credentials", "admin")
        if value is not None and credentials != "exec":
            raise ValueError(
                f"only used with credentials: exec (credentials is {credentials!r}); "
                "set credentials: exec or remove kubeloginMode"
            )
        return value

    @property
    def effective_kubelogin_mode(self) -> str | None:
        """kubelogin's login method for this program's provider (only with `credentials: exec`)."""
        if self.credentials != "exec":
            return None
        return self.kubelogin_mode or "azurecli"

    @property
    def effective_dns_prefix(self) -> str:
        """The DNS prefix of a created cluster: `dnsPrefix`, else the cluster name made DNS-safe."""
        return self.dns_prefix or self.cluster_name.replace("_", "-")[:54].strip("-")


def parse_aks(data: AksSpec | Mapping[str, Any], source: str = "config") -> AksSpec:
    """Validate an `aks` section on its own; raise ConfigError with `aks.`-prefixed paths."""
    if isinstance(data, AksSpec):
        return data
    try:
        return AksSpec.model_validate(dict(data))
    except ValidationError as error:
        raise ConfigError(problems_from_validation_error(error, prefix=("aks",), model=AksSpec), source) from None
