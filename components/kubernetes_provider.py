"""The Kubernetes provider a stack's components use: the stack owns the fields of the objects it manages.

pulumi-kubernetes applies objects with server-side apply under its own field manager. A field another manager also
set (Helm, whose install the stack adopted; NVIDIA's operator; a `kubectl apply --server-side`) stays co-owned when
the values agree, and the stack's next change to it is a conflict ("Apply failed with N conflicts: conflicts with
\\"helm\\""), which the provider does not resolve by itself: it takes over only the fields of kubectl's and its own
client-side managers (provider await.go `fixCSAFieldManagers`). So the provider forces its applies
(`enablePatchForce`): on a conflict the stack's value wins and its manager becomes the field's owner, as desired
state should. `adopt` turns on `upsertExistingObjects` for the one `pulumi up` that takes an existing install over
(docs/tasks/adopt-existing-install.md).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

__all__ = ["kubernetes_provider"]


def kubernetes_provider(name: str, kubeconfig: pulumi.Input[str], *, adopt: bool = False,
                        cluster_identifier: str | None = None,
                        opts: pulumi.ResourceOptions | None = None) -> k8s.Provider:
    """A provider for the cluster `kubeconfig` points at, forcing its server-side applies."""
    return k8s.Provider(name, kubeconfig=kubeconfig, cluster_identifier=cluster_identifier,
                        upsert_existing_objects=adopt or None, enable_patch_force=True, opts=opts)
