"""Warning before a GPU outage: deleting or replacing a GPU pool, the cluster or a driver DaemonSet.

A replace of an AgentPool, the ManagedCluster or a driver DaemonSet takes every GPU of the pool (or the cluster)
away: both providers delete a named object before creating its replacement, and a driver DaemonSet's pods unload
the kernel modules under running jobs. The program cannot tell a replace is coming (the engine and the providers
compute the diff after the program registered its resources), and a `before_delete` hook, which would see it,
makes the engine refuse a plain `pulumi destroy` ("You must run with the `--run-program` flag to use delete hooks
during destroy", pulumi/pulumi pkg/engine/destroy.go `newDestroySource`): a destroy must not need the program.

So the warning watches the *identity* of the guarded resources instead: an outage guard is a `pulumi.Stash` (the
engine's built-in resource; nothing in the cluster or the cloud) whose input maps each guarded resource's logical
name to the properties whose change makes its provider replace it (a DaemonSet's selector, an agent pool's VM
size, ...). When one of them changes, or a guarded resource disappears from the program, the stash is updated,
and its `before_update` hook, which also runs in preview, compares the old and new maps and warns, naming the
resource, what changed and how to proceed. The guarded resources depend on their guard, so `pulumi up` prints the
warning before it replaces anything. Destroy deletes the stash like any resource, without hooks.

Pools and created clusters are also `protect`ed by default (`aks.protect`), so the engine refuses their delete
outright; the warning explains the refusal and is the only guard where protection is off (and for the driver
DaemonSets, which a change of `operator.driver` may legitimately replace).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

__all__ = ["OUTAGES", "OutageGuard", "outage_changes", "outage_message"]

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


def outage_message(resource_type: str, name: str, what: str) -> str:
    """The warning for deleting (or replacing) one resource; `what` says what the plan does to it."""
    consequence, remedy = OUTAGES[resource_type]
    return (
        f"GPU outage ahead: {name} ({resource_type}) is planned for deletion or replacement ({what}): "
        f"{consequence}. {remedy}."
    )


def _identities(inputs: Mapping[str, Any] | None) -> tuple[str, Mapping[str, Any]]:
    guarded = (inputs or {}).get("input") or {}
    return str(guarded.get("type", "")), guarded.get("resources") or {}


def outage_changes(old_inputs: Mapping[str, Any] | None, new_inputs: Mapping[str, Any] | None) -> list[str]:
    """The warnings for one guard's update: a guarded resource gone, or one whose identity changed."""
    resource_type, old = _identities(old_inputs)
    new_type, new = _identities(new_inputs)
    resource_type = resource_type or new_type
    if resource_type not in OUTAGES:
        return []
    warnings = []
    for name in sorted(old):
        if name not in new:
            warnings.append(outage_message(resource_type, name, "removed from the program"))
            continue
        changed = sorted(key for key in set(old[name]) | set(new[name]) if old[name].get(key) != new[name].get(key))
        if changed:
            warnings.append(outage_message(resource_type, name, f"changed: {', '.join(changed)}"))
    return warnings


def _warn(args: pulumi.ResourceHookArgs) -> None:
    for message in outage_changes(args.old_inputs, args.new_inputs):
        pulumi.log.warn(message)


class OutageGuard:
    """A stash of the identities of one kind of guarded resource, with the warning hook bound to its updates.

    `identities` maps each guarded resource's name to the properties that force its replacement (plain values:
    they are compared as the engine stored them). Give the guard to the guarded resources' `depends_on`.
    `name` must be unique in the program (the engine finds hooks by name): use the component's name.
    """

    def __init__(
        self,
        name: str,
        resource_type: str,
        identities: Mapping[str, Mapping[str, Any]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if resource_type not in OUTAGES:
            raise ValueError(f"no outage is known for {resource_type}: one of {', '.join(sorted(OUTAGES))}")
        self.hook = pulumi.ResourceHook(f"{name}-gpu-outage-warning", _warn,
                                        pulumi.ResourceHookOptions(on_dry_run=True))
        self.stash = pulumi.Stash(
            f"{name}-gpu-outage-guard",
            input={"type": resource_type, "resources": {key: dict(value) for key, value in identities.items()}},
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(hooks=pulumi.ResourceHookBinding(before_update=[self.hook]))
            ),
        )
