"""A snapshot saved to a file, and read back: `diag --save FILE` on the cluster, `diag --from FILE` anywhere.

The file is the API server's objects as read, plus the namespace and the time they were read (against which
"held too long" is measured, so a saved snapshot is judged exactly as it was when taken). It is JSON:
`{"kind": "GpuDiagSnapshot", "version": 1, "namespace": ..., "now": ISO time, "nodes": [...], ...}`. Support can
judge a customer's cluster from the file alone, and the tests replay snapshots recorded from a real API server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpu_operator.config import ConfigError, Problem
from gpu_operator.diag.snapshot import Snapshot, parse_time

__all__ = ["KIND", "VERSION", "dump_snapshot", "load_snapshot", "write_snapshot", "read_snapshot"]

KIND = "GpuDiagSnapshot"
VERSION = 1
_LISTS = ("nodes", "pods", "daemonsets", "config_maps", "events", "gpu_pods")
_OPTIONAL = ("cluster_policy", "nic_cluster_policy")


def dump_snapshot(snapshot: Snapshot) -> dict[str, Any]:
    document: dict[str, Any] = {"kind": KIND, "version": VERSION, "namespace": snapshot.namespace,
                                "now": snapshot.now.isoformat()}
    for key in _LISTS:
        document[key] = list(getattr(snapshot, key))
    for key in _OPTIONAL:
        document[key] = getattr(snapshot, key)
    document["notes"] = list(snapshot.notes)
    return document


def load_snapshot(document: Any, source: str) -> Snapshot:
    """A snapshot from its saved form; every problem of the document at once, as ConfigError."""
    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise ConfigError([Problem("kind", f"is not a saved diag snapshot (kind must be {KIND}); make one with "
                                           "gpu-operator diag --save FILE")], source)
    problems = []
    if document.get("version") != VERSION:
        problems.append(Problem("version", f"is {document.get('version')!r}; this gpu-operator reads version "
                                           f"{VERSION}"))
    if not isinstance(document.get("namespace"), str) or not document["namespace"]:
        problems.append(Problem("namespace", "must be the operator namespace the snapshot was taken in"))
    now = parse_time(document.get("now"))
    if now is None:
        problems.append(Problem("now", "must be the ISO 8601 time the snapshot was taken"))
    for key in _LISTS:
        value = document.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            problems.append(Problem(key, "must be a list of Kubernetes objects"))
    for key in _OPTIONAL:
        if document.get(key) is not None and not isinstance(document[key], dict):
            problems.append(Problem(key, "must be a Kubernetes object or null"))
    notes = document.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        problems.append(Problem("notes", "must be a list of strings"))
    if problems:
        raise ConfigError(problems, source)
    assert now is not None
    return Snapshot(namespace=document["namespace"], now=now,
                    **{key: document.get(key, []) for key in _LISTS},
                    **{key: document.get(key) for key in _OPTIONAL}, notes=tuple(notes))


def write_snapshot(snapshot: Snapshot, path: Path) -> None:
    try:
        path.write_text(json.dumps(dump_snapshot(snapshot), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as error:
        raise ConfigError([Problem("", f"cannot be written: {error.strerror or error}; name a file in a writable "
                                       "directory")], str(path)) from None


def read_snapshot(path: Path) -> Snapshot:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError([Problem("", f"cannot be read ({error}); name a file written by diag --save")],
                          str(path)) from None
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ConfigError([Problem("", f"is not JSON ({error}); name a file written by diag --save")],
                          str(path)) from None
    return load_snapshot(document, str(path))
