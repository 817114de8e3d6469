"""A snapshot of the cluster objects `diag` judges, as the API server returned them (plain JSON objects).

The checks are pure functions of a snapshot, so they run the same on a live cluster, on recorded API responses
and on test fixtures. `now` is the time the snapshot was taken, against which "held too long" is measured.

When a node label changed is not stored as such by Kubernetes. The closest record is the node's managedFields:
each field manager's entry carries the time of its last write that changed anything it owns, so the latest entry
owning a label is at or after the label's own change. The age computed from it is therefore a lower bound: a
label reported as held for 20 minutes has been held at least that long, and "held too long" never fires early.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

__all__ = [
    "Snapshot",
    "Obj",
    "name",
    "namespace",
    "labels",
    "label_changed_at",
    "parse_time",
    "count",
    "subject",
]

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Snapshot:
    """What the I/O layer read: nodes, the operator namespace's pods, DaemonSets, ConfigMaps and events, pods
    requesting GPUs anywhere (with their events), and the ClusterPolicy and NicClusterPolicy when present."""

    namespace: str
    now: datetime
    nodes: Sequence[Obj] = ()
    pods: Sequence[Obj] = ()
    daemonsets: Sequence[Obj] = ()
    config_maps: Sequence[Obj] = ()
    events: Sequence[Obj] = ()
    gpu_pods: Sequence[Obj] = ()
    cluster_policy: Obj | None = None
    nic_cluster_policy: Obj | None = None
    notes: Sequence[str] = field(default=())

    def config_map(self, map_name: str) -> Obj | None:
        return next((c for c in self.config_maps if name(c) == map_name), None)

    def events_for(self, kind: str, obj_namespace: str, obj_name: str) -> list[Obj]:
        return [e for e in self.events
                if (e.get("involvedObject") or {}).get("kind") == kind
                and (e.get("involvedObject") or {}).get("name") == obj_name
                and (e.get("involvedObject") or {}).get("namespace", obj_namespace) == obj_namespace]


def name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def namespace(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("namespace", ""))


def labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def subject(kind: str, obj: Obj) -> str:
    """`node/NAME`, `pod/NS/NAME`: how a finding names its object."""
    ns = namespace(obj)
    return f"{kind}/{ns}/{name(obj)}" if ns else f"{kind}/{name(obj)}"


def parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def label_changed_at(node: Obj, label: str) -> datetime | None:
    """The latest managedFields time among the managers owning `label` (see the module docstring), or None."""
    key = f"f:{label}"
    times = []
    for entry in (node.get("metadata") or {}).get("managedFields") or []:
        owned = ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels") or {}
        if key in owned:
            when = parse_time(entry.get("time"))
            if when is not None:
                times.append(when)
    return max(times, default=None)


def count(quantity: Any) -> int | None:
    """A countable resource's quantity (`"8"`, `8`, `"1k"`) as an int; None when absent or not a count."""
    if quantity is None:
        return None
    text = str(quantity).strip()
    multipliers = {"k": 1000, "M": 1000**2, "G": 1000**3}
    try:
        if text and text[-1] in multipliers:
            return int(text[:-1]) * multipliers[text[-1]]
        return int(text)
    except ValueError:
        return None
