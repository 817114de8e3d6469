"""Warning before a GPU outage: deleting or replacing a GPU pool, the cluster or the driver DaemonSet.

A replace of an AgentPool, the ManagedCluster or the driver DaemonSet takes every GPU of the pool (or the
cluster) away: both providers delete a named object before creating its replacement, and a driver DaemonSet's
pods unload the kernel modules under running jobs. The program itself cannot tell a replace is coming: the diff
is computed by the engine and the providers after the program has registered its resources. What it can do is
bind a `before_delete` resource hook that also runs in preview: the engine calls it whenever its plan deletes
the resource (a destroy, a removal from the program, or the delete half of a replace), and the hook writes a
warning naming the resource and how to proceed.

Pools and created clusters are also `protect`ed by default (`aks.protect`), so the engine refuses the delete
outright; the warning explains the refusal and is the only guard where protection is off (and for the driver
DaemonSet, which a change of `operator.driver` may legitimately replace).
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi

__all__ = ["outage_hook", "outage_message", "OUTAGES"]

#: Resource type → what deleting one means, and how to proceed.
OUTAGES: Mapping[str, tuple[str, str]] = {
    "azure-native:containerservice:AgentPool": (
        "every node of this GPU pool is deleted with its running jobs",
        "if a changed property forces the replace (vmSize, osSKU, availabilityZones, vnetSubnetID, osDisk*, "
        "gpuProfile), revert it, or add a new pool beside this one and move workloads first; to go ahead, drain "
        "the pool, then set aks.protect: false (or `pulumi state unprotect <urn>`) and run `pulumi up` again",
    ),
    "azure-native:containerservice:ManagedCluster": (
        "the whole cluster is deleted, every GPU pool and workload with it",
        "revert the change that forces the replace; to go ahead, set aks.protect: false (or "
        "`pulumi state unprotect <urn>`) and run `pulumi up` again",
    ),
    "kubernetes:apps/v1:DaemonSet": (
        "the driver pods are deleted and unload the GPU driver under every running GPU job",
        "if the replace is unintended (a changed selector, namespace or cluster), revert it; to go ahead, drain "
        "GPU workloads (or cordon the GPU nodes) before `pulumi up`",
    ),
}


def outage_message(resource_type: str, name: str, urn: str) -> str:
    """The warning for deleting (or replacing) one resource."""
    consequence, remedy = OUTAGES[resource_type]
    return (
        f"GPU outage ahead: {name} ({resource_type}) is planned for deletion or replacement: {consequence}. "
        f"{remedy}. [{urn}]"
    )


def _warn(args: pulumi.ResourceHookArgs) -> None:
    pulumi.log.warn(outage_message(args.type, args.name, args.urn))


def outage_hook(name: str) -> pulumi.ResourceHookBinding:
    """A hook binding that warns, in preview too, before the engine deletes the resource it is bound to.

    `name` must be unique in the program (the engine finds delete hooks by name): use the component's name.
    """
    hook = pulumi.ResourceHook(f"{name}-gpu-outage-warning", _warn, pulumi.ResourceHookOptions(on_dry_run=True))
    return pulumi.ResourceHookBinding(before_delete=[hook])
