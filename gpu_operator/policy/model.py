"""A policy: a named, pure check over the rendered Kubernetes objects of a stack, with its severity and fix.

Each policy sees the whole list of objects (most look at one object at a time; some, such as a ServiceMonitor
that must select a Service, span several) and yields violations. The same table serves `gpu-operator check`
and, in a separate environment, a Pulumi CrossGuard pack.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from gpu_operator.policy.context import PolicyContext

__all__ = ["Enforcement", "Object", "Policy", "Severity", "Violation", "chart_name", "chart_object", "object_ref"]

Object = Mapping[str, Any]


class Severity(str, Enum):
    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Enforcement(str, Enum):
    MANDATORY = "mandatory"
    ADVISORY = "advisory"
    DISABLED = "disabled"


@dataclass(frozen=True)
class Violation:
    policy: str
    resource: str
    """`Kind namespace/name` of the object at fault."""
    message: str


@dataclass(frozen=True)
class Policy:
    name: str
    description: str
    severity: Severity
    enforcement: Enforcement
    remediation: str
    check: Callable[[list[Object], PolicyContext], Iterator[tuple[Object, str]]]

    def evaluate(self, objects: Iterable[Object], context: PolicyContext | None = None) -> list[Violation]:
        found = self.check(list(objects), context or PolicyContext())
        return [Violation(self.name, object_ref(obj), message) for obj, message in found]


def chart_object(name: str, namespace: str | None, chart: str, version: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """A Helm chart as the policies see it: a `Chart` object with its chart name, version and values (what
    Pulumi's `helm.v4.Chart` takes), so `check` and the CrossGuard pack judge charts alike."""
    return {"apiVersion": "helm.sh/v4", "kind": "Chart", "metadata": {"name": name, "namespace": namespace},
            "chart": chart, "version": version, "values": dict(values)}


#: A packaged chart's file name, `<name>-<version>.tgz` as `helm package` and `helm pull` write it.
_PACKAGED_CHART = re.compile(r"^(?P<name>.+?)(-v?[0-9]+\.[0-9]+\.[0-9]+[^/]*)?\.(tgz|tar\.gz)\Z")


def chart_name(chart: str) -> str:
    """The chart's name in a `Chart` object's `chart`: a name, an `oci://.../<name>` reference, a chart directory
    `.../<name>` (as `helm pull --untar` names it) or a packaged chart `.../<name>-<version>.tgz`."""
    last = chart.rstrip("/").rsplit("/", 1)[-1]
    packaged = _PACKAGED_CHART.match(last)
    return packaged.group("name") if packaged else last


def object_ref(obj: Object) -> str:
    metadata = obj.get("metadata") or {}
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{obj.get('kind')} {where}{metadata.get('name')}"
