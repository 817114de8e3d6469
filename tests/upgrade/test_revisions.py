"""The newest ControllerRevision of each DaemonSet decides which template its pods should run."""

from __future__ import annotations

from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
from lightkube.resources.apps_v1 import ControllerRevision

from gpu_operator.upgrade.revisions import newest_revisions


def _revision(owner: str, number: int, digest: str, kind: str = "DaemonSet") -> ControllerRevision:
    ref = OwnerReference(apiVersion="apps/v1", kind=kind, name=owner, uid="u", controller=True)
    return ControllerRevision(metadata=ObjectMeta(name=f"{owner}-{digest}", ownerReferences=[ref],
                                                  labels={"controller-revision-hash": digest}), revision=number,
                              data={})


def test_the_highest_number_wins_per_daemonset_whatever_the_order() -> None:
    revisions = [_revision("driver", 2, "b"), _revision("driver", 3, "c"), _revision("driver", 1, "a"),
                 _revision("validator", 1, "v"), _revision("web", 9, "x", kind="StatefulSet")]
    assert newest_revisions(revisions) == {"driver": "c", "validator": "v"}
