"""The policies as a Pulumi CrossGuard pack: one stack validation per policy, over the stack's Kubernetes objects.

`pulumi preview --policy-pack policy-pack` runs them on what the program registers, before anything is created.
`pulumi_policy` is imported only by :func:`crossguard_policies` (building a `PolicyPack` starts its analyzer
server, so it happens in the pack's `__main__.py`, never on import). The pack runs in its own virtualenv
(`policy-pack/requirements.txt`): `pulumi-policy` 1.21 requires protobuf 5, which this package's agents cannot use,
and the policies need only pydantic and PyYAML.

The fleet facts the checks need come from the pack's policy config, the same for every policy: `poolTaints`
(per pool, a list of `{key, value, effect}`), `maxInfinibandNics`, `prometheusSelector`; unset,
the checks that need them are off (`gpu-operator check` derives them from the config instead); `production` and
`maxParallelUpgrades` feed the advisory on unlimited parallel driver upgrades. Helm charts are seen as `Chart`
objects (their chart name and values), as `check` sees them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_operator.policy.catalog import POLICIES
from gpu_operator.policy.context import PolicyContext
from gpu_operator.policy.model import Policy, chart_object

__all__ = ["CONFIG_SCHEMA", "crossguard_policies", "context_from_config"]

#: The policy config every policy accepts (JSON schema properties, as CrossGuard takes them).
CONFIG_SCHEMA: dict[str, dict[str, Any]] = {
    "poolTaints": {"type": "array", "items": {"type": "array", "items": {"type": "object"}}},
    "maxInfinibandNics": {"type": "integer", "minimum": 0},
    "prometheusSelector": {"type": "object", "additionalProperties": {"type": "string"}},
    "production": {"type": "boolean"},
    "maxParallelUpgrades": {"type": "integer", "minimum": 0},
    "unregisteredInfinibandPools": {"type": "array", "items": {"type": "string"}},
}


def _integer(value: Any) -> int | None:
    """A count of the policy config: the engine hands JSON numbers over as floats (8 arrives as 8.0)."""
    return None if value is None else int(value)


def context_from_config(config: Mapping[str, Any]) -> PolicyContext:
    taints = tuple(tuple({"key": str(t.get("key", "")), "value": str(t.get("value", "") or ""),
                          "effect": str(t.get("effect", ""))} for t in pool) for pool in config.get("poolTaints") or ())
    return PolicyContext(
        pool_taints=taints,
        max_infiniband_nics=_integer(config.get("maxInfinibandNics")),
        prometheus_selector=dict(config.get("prometheusSelector") or {}),
        production=bool(config.get("production", False)),
        max_parallel_upgrades=_integer(config.get("maxParallelUpgrades")),
        unregistered_infiniband_pools=tuple(str(p) for p in config.get("unregisteredInfinibandPools") or ()),
    )


def _plain(value: Any) -> Any:
    """A policy SDK property value as plain dicts and lists (its proxies raise on unknown values)."""
    if isinstance(value, Mapping) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _object(resource_type: str, name: str, props: Any) -> dict[str, Any]:
    obj = _plain(props)
    if resource_type == "kubernetes:helm.sh/v4:Chart":  # as `gpu-operator check` sees a chart
        return chart_object(obj.get("name") or name, obj.get("namespace"), str(obj.get("chart", "")),
                            str(obj.get("version", "")), obj.get("values") or {})
    if "kind" not in obj:  # kubernetes:<group>/<version>:<Kind>
        _, group_version, kind = resource_type.split(":", 2)
        obj["kind"] = kind
        obj["apiVersion"] = group_version.removeprefix("core/")
    return obj


def _stack_validation(policy: Policy, pp: Any) -> Any:
    def validate(args: Any, report_violation: Any) -> None:
        objects: list[dict[str, Any]] = []
        urns: dict[int, str] = {}
        for resource in args.resources:
            if not resource.resource_type.startswith("kubernetes:"):
                continue
            obj = _object(resource.resource_type, resource.name, resource.props)
            objects.append(obj)
            urns[id(obj)] = resource.urn
        for obj, message in policy.check(objects, context_from_config(args.get_config() or {})):
            report_violation(f"{message}. Fix: {policy.remediation}", urns.get(id(obj)))

    return pp.StackValidationPolicy(
        name=policy.name,
        description=policy.description,
        validate=validate,
        enforcement_level=pp.EnforcementLevel(policy.enforcement.value),
        severity=pp.Severity(policy.severity.value),
        config_schema=pp.PolicyConfigSchema(properties=CONFIG_SCHEMA),
        remediation_steps=policy.remediation,
    )


def crossguard_policies() -> list[Any]:
    """Every policy as a `pulumi_policy.StackValidationPolicy` (imports the policy SDK)."""
    import pulumi_policy as pp

    return [_stack_validation(policy, pp) for policy in POLICIES]
