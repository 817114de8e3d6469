"""The I/O layer of `diag`: read a snapshot of the cluster with lightkube, read-only (get and list, nothing else).

What it reads: the nodes (optionally those matching a label selector, e.g. one pool), the namespace's pods,
DaemonSets, ConfigMaps and events, the pods anywhere that request GPUs or RDMA devices and are not running (with
their events), and the ClusterPolicy and NicClusterPolicy when their CRDs are installed. The validator's
`/run/nvidia/validations` files are read from the validator pods' init-container status, never by `pods/exec`:
a diagnostic role that may exec into privileged pods on every GPU node is a bigger grant than a health check
deserves, and each init container exits 0 exactly when it has written its file.

Failures to read what the checks need (no kubeconfig, an unknown context, an unreachable API server, a refused
list of nodes, pods or DaemonSets) raise :class:`~gpu_operator.config.ConfigError`, which the CLI reports in one
line with status 2. Refused optional reads (events, the policies) become notes in the report instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import httpx2 as httpx
import yaml
from lightkube import Client, KubeConfig, operators
from lightkube.core.exceptions import ApiError, ConfigError as KubeConfigError
from lightkube.generic_resource import create_global_resource
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import ConfigMap, Event, Namespace, Node, Pod

from gpu_operator.config import ConfigError, Problem
from gpu_operator.diag.snapshot import Obj, Snapshot
from gpu_operator.diag.workloads import requests_gpus

__all__ = ["connect", "required", "take_snapshot", "parse_selector", "CLUSTER_POLICY", "NIC_CLUSTER_POLICY"]

CLUSTER_POLICY = create_global_resource("nvidia.com", "v1", "ClusterPolicy", "clusterpolicies")
NIC_CLUSTER_POLICY = create_global_resource("mellanox.com", "v1alpha1", "NicClusterPolicy", "nicclusterpolicies")
#: Events of at most this many pending GPU pods outside the namespace are read (one list each).
_MAX_POD_EVENT_READS = 20
_TIMEOUT = httpx.Timeout(15.0)
T = TypeVar("T")


def _fail(source: str, message: str) -> ConfigError:
    return ConfigError([Problem("", message)], source)


def connect(kubeconfig: Path | None, context: str | None) -> tuple[Client, str]:
    """A client for `kubeconfig` (default: $KUBECONFIG, then ~/.kube/config, then in-cluster) and `context`;
    also the name the errors use for the cluster."""
    if kubeconfig is not None and not kubeconfig.is_file():
        raise _fail(str(kubeconfig), "no such kubeconfig file; pass --kubeconfig PATH of a readable file")
    where = str(kubeconfig) if kubeconfig else os.environ.get("KUBECONFIG") or "kubeconfig"
    try:
        config = KubeConfig.from_file(kubeconfig) if kubeconfig is not None else KubeConfig.from_env()
    except KubeConfigError as error:
        raise _fail(where, f"no usable kubeconfig ({error}); pass --kubeconfig PATH or set KUBECONFIG") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError) as error:
        raise _fail(where, f"is not a usable kubeconfig ({type(error).__name__}: {error}); pass a kubeconfig "
                           "with clusters, users and contexts") from None
    if context is not None and context not in (config.contexts or {}):
        known = ", ".join(sorted(config.contexts or {})) or "none"
        raise _fail(where, f"has no context {context!r} (it has: {known}); "
                                                      "pass one of those to --context")
    try:
        single = config.get(context_name=context)
        client = Client(config=single, timeout=_TIMEOUT, trust_env=True)
    except (KubeConfigError, ValueError, KeyError, OSError) as error:
        raise _fail(where, f"cannot be used ({error}); check its current context, "
                                                      "cluster and user") from None
    server = single.cluster.server if single is not None and single.cluster is not None else "the API server"
    return client, server


def parse_selector(text: str) -> dict[str, Any]:
    """A node label selector (`key=value`, `key!=value`, `key`, `!key`, comma-separated) for lightkube."""
    pairs: dict[str, Any] = {}
    for term in (t.strip() for t in text.split(",")):
        if not term or "(" in term or ")" in term:
            raise _fail("--selector", f"{text!r}: use key=value, key!=value, key or !key, comma-separated "
                                      "(set-based 'in (...)' terms are not supported)")
        if "!=" in term:
            key, value = term.split("!=", 1)
            pairs[key.strip()] = operators.not_equal(value.strip())
        elif "=" in term:
            key, value = term.split("=", 1)
            pairs[key.strip().rstrip("=")] = value.strip().lstrip("=")
        elif term.startswith("!"):
            pairs[term[1:].strip()] = operators.not_exists()
        else:
            pairs[term] = None
    return pairs


def _dicts(items: Iterable[Any]) -> list[Obj]:
    return [item.to_dict() for item in items]


_DIAG_NEEDS = "diag needs get/list on nodes, pods, daemonsets, configmaps and events"


def required(server: str, what: str, read: Callable[[], T], needs: str = _DIAG_NEEDS) -> T:
    """`read()`, or a ConfigError naming the cluster, what could not be read and why (`needs`: the grants the
    command needs, said when the API server refuses)."""
    try:
        return read()
    except ApiError as error:
        status = error.status.code
        if status in (401, 403):
            raise _fail(server, f"refused to list {what} ({error.status.message}); {needs}: use a kubeconfig "
                                "whose user has them") from None
        raise _fail(server, f"failed to list {what}: {error.status.message}") from None
    except httpx.HTTPError as error:
        raise _fail(server, f"cannot be reached ({type(error).__name__}: {error}); check --kubeconfig and "
                            "--context, and that the cluster is up") from None


def _optional(notes: list[str], what: str, read: Callable[[], T], missing: T) -> T:
    try:
        return read()
    except ApiError as error:
        if error.status.code == 404:
            return missing
        notes.append(f"{what} could not be read ({error.status.message}); the checks that need it were skipped")
        return missing


def _may_run_on(pod: Obj, nodes: list[Obj]) -> bool:
    """Whether a pod is bound to one of `nodes`, or, unbound, has a nodeSelector one of them satisfies."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return any(n["metadata"]["name"] == spec["nodeName"] for n in nodes)
    wanted = (spec.get("nodeSelector") or {}).items()
    return any(wanted <= ((n["metadata"].get("labels") or {}).items()) for n in nodes)


def take_snapshot(client: Client, server: str, namespace: str, selector: str | None = None) -> Snapshot:
    notes: list[str] = []
    node_labels = parse_selector(selector) if selector else None
    nodes = required(server, "nodes", lambda: _dicts(client.list(Node, labels=node_labels)))
    exists = _optional(notes, f"namespace {namespace}", lambda: client.get(Namespace, namespace), None)
    if exists is None and not notes:
        raise _fail(server, f"has no namespace {namespace!r}; pass the operator's namespace to --namespace")
    notes.clear()  # a refused get of the namespace is no loss: its pods are listed next
    pods = required(server, f"pods in {namespace}", lambda: _dicts(client.list(Pod, namespace=namespace)))
    daemonsets = required(server, f"daemonsets in {namespace}",
                           lambda: _dicts(client.list(DaemonSet, namespace=namespace)))
    config_maps = required(server, f"configmaps in {namespace}",
                            lambda: _dicts(client.list(ConfigMap, namespace=namespace)))
    events = _optional(notes, f"events in {namespace}",
                       lambda: _dicts(client.list(Event, namespace=namespace)), [])
    not_running = {"status.phase": operators.not_in(["Running", "Succeeded"])}
    candidates = _optional(notes, "pods outside the namespace",
                           lambda: _dicts(client.list(Pod, namespace="*", fields=not_running)), [])
    gpu_pods = [pod for pod in candidates if requests_gpus(pod)]
    if selector:
        gpu_pods = [p for p in gpu_pods if _may_run_on(p, nodes)]
    outside = [p for p in gpu_pods if p["metadata"].get("namespace") != namespace][:_MAX_POD_EVENT_READS]
    for pod in outside:
        meta = pod["metadata"]
        events = events + _optional(notes, f"events of pod {meta['namespace']}/{meta['name']}", lambda: _dicts(
            client.list(Event, namespace=meta["namespace"],
                        fields={"involvedObject.kind": "Pod", "involvedObject.name": meta["name"]})), [])
    policies = _optional(notes, "ClusterPolicies", lambda: _dicts(client.list(CLUSTER_POLICY)), [])
    nic_policies = _optional(notes, "NicClusterPolicies", lambda: _dicts(client.list(NIC_CLUSTER_POLICY)), [])
    if len(policies) > 1:
        notes.append(f"{len(policies)} ClusterPolicies exist; only the first ({policies[0]['metadata']['name']}) "
                     "is read, and the operator itself acts on one only")
    return Snapshot(
        namespace=namespace, now=datetime.now(timezone.utc), nodes=nodes, pods=pods, daemonsets=daemonsets,
        config_maps=config_maps, events=events, gpu_pods=gpu_pods,
        cluster_policy=policies[0] if policies else None,
        nic_cluster_policy=nic_policies[0] if nic_policies else None, notes=tuple(notes),
    )
