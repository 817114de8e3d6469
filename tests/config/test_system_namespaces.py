"""Every system namespace, at every key that makes the stack own a namespace, is refused; the stack's own are not.

The list is written out here, not taken from the module under test, so that dropping a name from the module's set
fails a case: the four namespaces every cluster brings (`default`, `kube-system`, `kube-public`,
`kube-node-lease`) and any other name under the `kube-` prefix Kubernetes reserves for them.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
SYSTEM = ["default", "kube-system", "kube-public", "kube-node-lease", "kube-gpu"]
OWN = ["gpu-operator-2", "kubeflow", "my-kube-tools", "nvidia-network"]
DRA = {"aks": AKS, "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "gpuAllocation": "dra"}],
       "network": {"enabled": False}}


def owned(key: str, name: str) -> dict[str, Any]:
    """A document in which the stack creates namespace `name` through `key`."""
    if key == "namespace":
        return {"namespace": name}
    if key == "network.namespace":
        return {"network": {"enabled": True, "vfDeviceIds": ["101e"], "namespace": name}}
    if key == "dra.namespace":
        return {**DRA, "dra": {"namespace": name}}
    template = {"name": "one-gpu", "namespace": name,
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
    return {**DRA, "dra": {"namespaces": {name: "create"}, "claimTemplates": [template]}}


KEYS = ["namespace", "network.namespace", "dra.namespace", "dra.namespaces"]


def path_of(key: str, name: str) -> str:
    return f"dra.namespaces.{name}" if key == "dra.namespaces" else key


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("name", SYSTEM)
def test_a_system_namespace_is_refused_at_every_key_that_owns_one(key: str, name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(owned(key, name))
    found = {p.path: p.message for p in caught.value.problems}
    message = found[path_of(key, name)]
    if key == "dra.namespace" and name == "default":
        assert message.startswith("the dra-driver-nvidia-gpu chart refuses the default namespace")
    elif key == "dra.namespaces":
        assert message.startswith(f"{name!r} is a namespace of the cluster itself, which the stack would delete "
                                  f"on destroy: declare it existing, dra.namespaces: {{{name}: existing}}")
    else:
        assert message.startswith(f"{name!r} is a namespace of the cluster itself, which the stack would create, "
                                  "label for Pod Security and delete on destroy: use a namespace of the stack's own")


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("name", OWN)
def test_a_namespace_of_the_stacks_own_is_accepted(key: str, name: str) -> None:
    parse_config(owned(key, name))


@pytest.mark.parametrize("name", SYSTEM)
def test_a_system_namespace_the_stack_only_uses_may_hold_claim_templates(name: str) -> None:
    """`existing` is the way to put claim templates into a namespace the cluster owns: never created or deleted."""
    document = owned("dra.namespaces", name)
    document["dra"]["namespaces"] = {name: "existing"}
    parse_config(document)


@pytest.mark.parametrize("name", SYSTEM)
def test_a_section_that_is_not_deployed_owns_no_namespace(name: str) -> None:
    parse_config({"network": {"enabled": False, "namespace": name}, "dra": {"enabled": False, "namespace": name}})
