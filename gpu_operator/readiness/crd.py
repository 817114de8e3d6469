"""Whether a CustomResourceDefinition is served yet: for custom resources whose CRD an operator creates at runtime.

The Network Operator creates the nv-ipam CRDs (`ippools.nv-ipam.nvidia.com`) itself, when it first reconciles a
NicClusterPolicy with `nvIpam` (Mellanox/network-operator v26.4.1 pkg/state/state_nv_ipam_cni.go `Sync` applies
manifests/state-nv-ipam-cni, CRDs included); its chart does not ship them. An IPPool sent before then is refused
("no matches for kind"), and Pulumi's Kubernetes provider retries a create only 5 times, 1 s doubling to 16 s, about
31 s in all (pulumi-kubernetes 4.32.0 pkg/await/await.go `Creation`: `WithMaxRetries(5)`, `WithBackoffFactor(2)`),
which an operator still starting, or busy with other states, can outlast. So the IPPool waits until its CRD
reports the `Established` condition `True` (the API server then serves the kind).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["CrdNotEstablished", "crd_established", "kubeconfig_crd_conditions", "wait_for_crd"]

#: A CRD's status conditions as this module needs them: (type, status) pairs; None while the CRD does not exist.
Conditions = Iterable[tuple[str, str]] | None


class CrdNotEstablished(TimeoutError):
    """The CRD was not established in time."""

    def __init__(self, name: str, timeout_seconds: float, exists: bool) -> None:
        state = "exists but is not Established" if exists else "does not exist"
        super().__init__(f"CustomResourceDefinition {name} {state} after {timeout_seconds:g} s: the Network Operator "
                         "creates it when it reconciles the NicClusterPolicy (kubectl -n network-operator logs "
                         "deploy/network-operator)")


def crd_established(conditions: Conditions) -> bool:
    """Whether the API server serves the CRD's kind."""
    return conditions is not None and any(kind == "Established" and status == "True" for kind, status in conditions)


def wait_for_crd(
    name: str,
    read_conditions: Callable[[], Conditions],
    timeout_seconds: float,
    poll_seconds: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Poll until the CRD is established; raise :class:`CrdNotEstablished` at the deadline (a failing read is
    retried until then, and re-raised)."""
    deadline = clock() + timeout_seconds
    exists = False
    while True:
        try:
            conditions = read_conditions()
        except Exception:
            if clock() >= deadline:
                raise
        else:
            conditions = list(conditions) if conditions is not None else None
            exists = conditions is not None
            if crd_established(conditions):
                return
            if clock() >= deadline:
                raise CrdNotEstablished(name, timeout_seconds, exists)
        sleep(max(0.0, min(poll_seconds, deadline - clock())))


def kubeconfig_crd_conditions(kubeconfig: str | Mapping[str, Any], name: str,
                              trust_env: bool = True) -> Callable[[], Conditions]:
    """A reader of one CRD's conditions through the Kubernetes API (needs `get` on that CRD)."""
    import yaml
    from lightkube import ApiError, Client, KubeConfig
    from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

    document = yaml.safe_load(kubeconfig) if isinstance(kubeconfig, str) else dict(kubeconfig)
    client = Client(KubeConfig.from_dict(document).get(), trust_env=trust_env)

    def read() -> Conditions:
        try:
            crd = client.get(CustomResourceDefinition, name)
        except ApiError as error:
            if error.status.code == 404:
                return None
            raise
        conditions = (crd.status.conditions if crd.status is not None else None) or []
        return [(condition.type, condition.status) for condition in conditions]

    return read
