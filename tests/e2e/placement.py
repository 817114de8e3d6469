"""Where a DaemonSet's pods belong: the nodes its selector and required affinity pick and whose taints it tolerates.

Written from the Kubernetes rules, independently of our render: `nodeSelector` labels must all match; each
`requiredDuringSchedulingIgnoredDuringExecution` term is ORed, its expressions ANDed (In, NotIn, Exists,
DoesNotExist, Gt, Lt); a taint with effect NoSchedule or NoExecute must be tolerated (key and value, or key with
`Exists`, or an empty key with `Exists`; a toleration without effect tolerates every effect).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tests.e2e.nodes import SimulatedNode

__all__ = ["expected_nodes", "selects", "tolerates"]

Object = Mapping[str, Any]


def _expression(expression: Object, labels: Mapping[str, str]) -> bool:
    key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt"):
        if key not in labels:
            return False
        value, bound = int(labels[key]), int(values[0])
        return value > bound if operator == "Gt" else value < bound
    raise ValueError(f"unknown node selector operator {operator}")


def selects(pod_spec: Object, labels: Mapping[str, str]) -> bool:
    if any(labels.get(key) != value for key, value in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    return any(all(_expression(e, labels) for e in term.get("matchExpressions") or []) for term in terms)


def _tolerated(taint: Mapping[str, str], tolerations: Iterable[Object]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint["effect"]:
            continue
        operator = toleration.get("operator", "Equal")
        if operator == "Exists" and (not toleration.get("key") or toleration["key"] == taint["key"]):
            return True
        if operator == "Equal" and toleration.get("key") == taint["key"] and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def tolerates(pod_spec: Object, taints: Iterable[Mapping[str, str]]) -> bool:
    tolerations = pod_spec.get("tolerations") or []
    return all(
        _tolerated(taint, tolerations) for taint in taints if taint["effect"] in ("NoSchedule", "NoExecute")
    )


def expected_nodes(daemonset: Object, nodes: Iterable[SimulatedNode]) -> set[str]:
    pod_spec = daemonset["spec"]["template"]["spec"]
    return {node.name for node in nodes if selects(pod_spec, node.labels) and tolerates(pod_spec, node.taints)}
