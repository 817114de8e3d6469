"""What a service account may do by the rendered RBAC, and what it did, by the API server's audit log.

`granted_rules` collects the rules of every Role and ClusterRole the rendered bindings give one service account
(a ClusterRole bound by a RoleBinding counts in that namespace only). `audited_requests` turns the audit events
of the account into requests (verb, API group, resource[/subresource], namespace, name, status code).
`unused_grants` lists each granted (group, resource, verb) that no allowed request used: a rule the agent does not
need, reported so the grant can be narrowed. A request answered 403 is a rule the agent needs and lacks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Grant", "Request", "audited_requests", "forbidden", "granted_rules", "unused_grants"]

Object = Mapping[str, Any]


@dataclass(frozen=True)
class Grant:
    """One rule of a Role or ClusterRole, with the namespace it applies in (None: cluster-wide)."""

    role: str
    namespace: str | None
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...]


@dataclass(frozen=True)
class Request:
    verb: str
    api_group: str
    resource: str
    namespace: str | None
    name: str | None
    code: int

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        group = self.api_group or "core"
        return f"{self.verb} {group}/{self.resource}{' ' + self.name if self.name else ''}{where} -> {self.code}"


def _binds(binding: Object, namespace: str, account: str) -> bool:
    return any(
        subject.get("kind") == "ServiceAccount" and subject.get("name") == account
        and subject.get("namespace", binding["metadata"].get("namespace")) == namespace
        for subject in binding.get("subjects") or []
    )


def granted_rules(objects: Iterable[Object], namespace: str, account: str) -> list[Grant]:
    """The rules the rendered bindings grant `namespace/account`."""
    objects = list(objects)
    roles = {(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]): obj for obj in objects
             if obj["kind"] in ("Role", "ClusterRole")}
    grants = []
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding") or not _binds(binding, namespace, account):
            continue
        scope = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], scope if ref["kind"] == "Role" else None, ref["name"]))
        if role is None:
            continue
        for rule in role.get("rules") or []:
            grants.append(Grant(
                f"{ref['kind']} {ref['name']}", scope, tuple(rule.get("apiGroups", ())),
                tuple(rule.get("resources", ())), tuple(rule.get("verbs", ())), tuple(rule.get("resourceNames", ())),
            ))
    return grants


def audited_requests(events: Iterable[Object]) -> list[Request]:
    requests = []
    for event in events:
        ref = event.get("objectRef") or {}
        if not ref.get("resource"):
            continue
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        requests.append(Request(
            event["verb"], ref.get("apiGroup", ""), resource, ref.get("namespace"), ref.get("name"),
            int((event.get("responseStatus") or {}).get("code", 0)),
        ))
    return requests


def forbidden(requests: Iterable[Request]) -> list[Request]:
    return [request for request in requests if request.code == 403]


def _covers(grant: Grant, request: Request) -> bool:
    return (
        (grant.namespace is None or grant.namespace == request.namespace)
        and ("*" in grant.api_groups or request.api_group in grant.api_groups)
        and ("*" in grant.resources or request.resource in grant.resources)
        and ("*" in grant.verbs or request.verb in grant.verbs)
        and (not grant.resource_names or request.name in grant.resource_names)
    )


def unused_grants(grants: Sequence[Grant], requests: Sequence[Request]) -> list[str]:
    """Each granted `verb group/resource` (with its role) that no allowed request used."""
    allowed = [request for request in requests if request.code != 403]
    unused = []
    for grant in grants:
        for group in grant.api_groups:
            for resource in grant.resources:
                for verb in grant.verbs:
                    probe = Grant(grant.role, grant.namespace, (group,), (resource,), (verb,), grant.resource_names)
                    if not any(_covers(probe, request) for request in allowed):
                        unused.append(f"{verb} {group or 'core'}/{resource} ({grant.role})")
    return unused
