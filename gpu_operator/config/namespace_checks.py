"""The namespaces the stack owns: never one of the cluster's own.

The stack creates the namespaces it deploys into (`namespace`, and `network.namespace` / `dra.namespace` when
those charts are installed), labels them for Pod Security Admission, and deletes them on `pulumi destroy`. A
cluster's system namespaces (`default`, `kube-system`, `kube-public`, `kube-node-lease`) exist before the stack
and hold objects that are not ours: taking one over would relabel it, and destroying the stack would try to delete
it. Kubernetes reserves the `kube-` prefix for such namespaces, so any `kube-*` namespace counts as one. A system
namespace is refused, with the key and a namespace of the stack's own to use instead.

Objects the stack creates in other namespaces (DRA claim templates, beside the workloads) need those namespaces
declared (`dra.namespaces`: `existing` or `create`); an undeclared one is refused here with its name, since the API
server would refuse the object mid-update (`namespaces "ml" not found`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.dra import dra_wanted
from gpu_operator.config.errors import Problem
from gpu_operator.config.network import network_wanted

__all__ = ["NAMESPACE_CHECKS", "SYSTEM_NAMESPACES", "is_system_namespace"]

#: Namespaces every Kubernetes cluster brings; a stack must never create, label or delete them.
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
#: The prefix Kubernetes reserves for its system namespaces.
RESERVED_PREFIX = "kube-"


def is_system_namespace(name: str) -> bool:
    """One of the cluster's own namespaces, or a name under the prefix Kubernetes reserves for them."""
    return name in SYSTEM_NAMESPACES or name.startswith(RESERVED_PREFIX)


def _refused(path: str, name: str, suggestion: str) -> Problem:
    return Problem(path, f"{name!r} is a namespace of the cluster itself, which the stack would create, label for "
                         f"Pod Security and delete on destroy: use a namespace of the stack's own, e.g. {suggestion}")


def _system_namespaces(doc: GpuStackConfig) -> Iterator[Problem]:
    if is_system_namespace(doc.namespace):
        yield _refused("namespace", doc.namespace, "gpu-operator")
    if network_wanted(doc.network, doc.pools) and is_system_namespace(doc.network.namespace):
        yield _refused("network.namespace", doc.network.namespace, "network-operator")
    # `default` is refused by the DRA chart check already, with the chart's own reason
    if dra_wanted(doc.dra, doc.pools) and doc.dra.namespace != "default" and is_system_namespace(doc.dra.namespace):
        yield _refused("dra.namespace", doc.dra.namespace, "dra-driver-nvidia-gpu")


def owned_namespaces(doc: GpuStackConfig) -> set[str]:
    """The namespaces the stack creates for itself: the operator's, and the Network Operator's and DRA driver's."""
    owned = {doc.namespace}
    if network_wanted(doc.network, doc.pools):
        owned.add(doc.network.namespace)
    if dra_wanted(doc.dra, doc.pools):
        owned.add(doc.dra.namespace)
    return owned


def _claim_template_namespaces(doc: GpuStackConfig) -> Iterator[Problem]:
    """Every claim template's namespace exists in the plan: the stack's own, or declared in `dra.namespaces`."""
    if not dra_wanted(doc.dra, doc.pools):
        return
    owned = owned_namespaces(doc)
    declared = doc.dra.namespaces
    for index, template in enumerate(doc.dra.claim_templates):
        name = template.namespace
        if name in owned or name in declared:
            continue
        yield Problem(f"dra.claimTemplates[{index}].namespace",
                      f"namespace {name!r} is not one the stack creates ({', '.join(sorted(owned))}), so creating "
                      f"claim template {template.name!r} in it fails when the cluster lacks it: declare it, "
                      f"dra.namespaces: {{{name}: existing}} when the cluster has it, or {{{name}: create}} for the "
                      "stack to create it (and delete it on destroy)")
    for name, use in declared.items():
        if use != "create":
            continue
        if is_system_namespace(name):
            yield Problem(f"dra.namespaces.{name}", f"{name!r} is a namespace of the cluster itself, which the "
                                                    "stack would delete on destroy: declare it existing, "
                                                    f"dra.namespaces: {{{name}: existing}}")
        elif name in owned:
            yield Problem(f"dra.namespaces.{name}", f"the stack creates namespace {name!r} already: remove it "
                                                    "from dra.namespaces")


NAMESPACE_CHECKS: tuple[Callable[[GpuStackConfig], Iterator[Problem]], ...] = (
    _system_namespaces, _claim_template_namespaces,
)
