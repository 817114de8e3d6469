"""Which template a DaemonSet's pods should run: the hash of its newest ControllerRevision.

The DaemonSet controller labels each pod with `controller-revision-hash` (the template it was created from) and
keeps one ControllerRevision per template, owned by the DaemonSet and numbered; the highest number is the current
template. A driver pod whose hash differs from it runs an old driver: the upgrade controller and the rollout wait
of `pulumi up` both read it this way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["REVISION_LABEL", "newest_revisions"]

REVISION_LABEL = "controller-revision-hash"


def newest_revisions(revisions: Iterable[Any]) -> dict[str, str]:
    """DaemonSet name -> the `controller-revision-hash` of its newest ControllerRevision (lightkube objects)."""
    newest: dict[str, tuple[int, str]] = {}
    for revision in revisions:
        owner = next((ref.name for ref in revision.metadata.ownerReferences or () if ref.kind == "DaemonSet"), None)
        digest = (revision.metadata.labels or {}).get(REVISION_LABEL, "")
        if owner and (owner not in newest or revision.revision > newest[owner][0]):
            newest[owner] = (revision.revision, digest)
    return {owner: digest for owner, (_, digest) in newest.items()}
