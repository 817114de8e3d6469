"""The `remediation` section as JSON (the controller's settings) read into a :class:`RemediationPolicy`.

The render writes the config document's section with every default filled in (camelCase, as the document spells
it); the controller reads it back here, with no pydantic. A key left out takes the policy's default, a `null` is
None where the section allows it, an unknown key is ignored (a newer render), and a value of the wrong kind is an
error naming its path. Every problem is reported at once, in one :class:`PolicyError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

from gpu_operator.remediation.policy import (
    TAINT_EFFECTS,
    Attempts,
    Breaker,
    CloudSpec,
    DrainMode,
    DrainSpec,
    Mode,
    PolicyError,
    PoolPolicy,
    RemediationPolicy,
    Rule,
    TaintSpec,
    Timeouts,
    XidOverrides,
)

__all__ = ["policy_from_document"]

T = TypeVar("T")
_MISSING = object()


class _Reader:
    """Reads typed values out of nested mappings, collecting a problem per bad value instead of stopping."""

    def __init__(self) -> None:
        self.problems: list[tuple[str, str]] = []

    def fail(self, path: str, message: str) -> None:
        self.problems.append((path, message))

    def get(self, data: Mapping[str, Any], path: str, key: str, check: Callable[[Any], bool], what: str,
            default: Any, nullable: bool = False) -> Any:
        value = data.get(key, _MISSING)
        if value is _MISSING or (value is None and nullable):
            return default if value is _MISSING else None
        if not check(value):
            self.fail(f"{path}{key}", f"must be {what}, not {value!r}")
            return default
        return value

    def section(self, data: Mapping[str, Any], path: str, key: str) -> Mapping[str, Any] | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.fail(f"{path}{key}", f"must be an object, not {value!r}")
            return None
        return value

    def word(self, data: Mapping[str, Any], path: str, key: str, kind: type[T], default: T,
             nullable: bool = False) -> T:
        words = [member.value for member in kind]  # type: ignore[attr-defined]
        value = self.get(data, path, key, lambda v: v in words, f"one of {', '.join(words)}", default, nullable)
        return value if value is None or isinstance(value, kind) else kind(value)  # type: ignore[call-arg]


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _integers(read: _Reader, data: Mapping[str, Any], path: str, cls: type[T], nullable: frozenset[str] = frozenset(),
              **known: Any) -> T:
    """A dataclass of whole numbers (and the given other fields) read from camelCase keys."""
    values = dict(known)
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name in values:
            continue
        key = "".join(part.capitalize() if i else part for i, part in enumerate(f.name.split("_")))
        values[f.name] = read.get(data, path, key, _count, "a whole number, 0 or more", f.default,
                                  nullable=f.name in nullable)
    return cls(**values)


def _drain(read: _Reader, data: Mapping[str, Any] | None, path: str) -> DrainSpec | None:
    if data is None:
        return None
    default = DrainSpec()
    mode = read.word(data, path, "mode", DrainMode, default.mode)
    partial = read.get(data, path, "partial", _flag, "true or false", default.partial)
    return _integers(read, data, path, DrainSpec, mode=mode, partial=partial)


def _taint(read: _Reader, data: Mapping[str, Any] | None, path: str) -> TaintSpec | None:
    if data is None:
        return None
    default = TaintSpec()
    key = read.get(data, path, "key", lambda v: isinstance(v, str) and bool(v), "a taint key", default.key)
    effect = read.get(data, path, "effect", lambda v: v in TAINT_EFFECTS, f"one of {', '.join(TAINT_EFFECTS)}",
                      default.effect)
    return TaintSpec(key, effect)


def _breaker(read: _Reader, data: Mapping[str, Any] | None, path: str) -> Breaker | None:
    if data is None:
        return None
    return _integers(read, data, path, Breaker, nullable=frozenset({"max_nodes", "max_percent"}))


def _rules(read: _Reader, data: Mapping[str, Any], path: str) -> dict[str, Rule]:
    section = read.section(data, path, "rules") or {}
    rules = {}
    for name, body in section.items():
        where = f"{path}rules.{name}."
        if not isinstance(body, Mapping):
            read.fail(where[:-1], f"must be an object, not {body!r}")
            continue
        actions = read.get(body, where, "actions", lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v),
                           "a list of actions", None, nullable=True)
        rules[str(name)] = Rule(
            actions=tuple(actions) if actions is not None else None,
            dry_run=read.get(body, where, "dryRun", _flag, "true or false", False),
            drain=_drain(read, read.section(body, where, "drain"), f"{where}drain."),
            taint=_taint(read, read.section(body, where, "taint"), f"{where}taint."),
        )
    return rules


def _xids(read: _Reader, data: Mapping[str, Any] | None) -> XidOverrides:
    if data is None:
        return XidOverrides()
    ignore = read.get(data, "xids.", "ignore", lambda v: isinstance(v, list) and all(_count(c) for c in v),
                      "a list of XIDs", [])
    classify: dict[int, str] = {}
    for code, name in (read.section(data, "xids.", "classify") or {}).items():
        if not str(code).isdigit() or not isinstance(name, str):
            read.fail(f"xids.classify.{code}", "must map an XID number to a fault class")
            continue
        classify[int(code)] = name
    return XidOverrides(frozenset(ignore), classify)


def _pools(read: _Reader, data: Mapping[str, Any]) -> dict[str, PoolPolicy]:
    pools = {}
    for name, body in (read.section(data, "", "pools") or {}).items():
        where = f"pools.{name}."
        if not isinstance(body, Mapping):
            read.fail(where[:-1], f"must be an object, not {body!r}")
            continue
        pools[str(name)] = PoolPolicy(
            mode=read.word(body, where, "mode", Mode, None, nullable=True),  # type: ignore[arg-type]
            breaker=_breaker(read, read.section(body, where, "breaker"), f"{where}breaker."),
            rules=_rules(read, body, where),
        )
    return pools


def _cloud(read: _Reader, data: Mapping[str, Any] | None) -> CloudSpec:
    if data is None:
        return CloudSpec()
    default = CloudSpec()
    return CloudSpec(
        provider=read.get(data, "cloud.", "provider", lambda v: isinstance(v, str), "a cloud provider",
                          default.provider, nullable=True),
        reimage=read.get(data, "cloud.", "reimage", _flag, "true or false", default.reimage),
        aks_auto_repair=read.get(data, "cloud.", "aksAutoRepair", _flag, "true or false", default.aks_auto_repair),
    )


def policy_from_document(document: Mapping[str, Any]) -> RemediationPolicy:
    """The policy of a `remediation` section; PolicyError lists every problem with its path."""
    if not isinstance(document, Mapping):
        raise PolicyError([("", f"must be an object, not {document!r}")])
    read = _Reader()
    default = RemediationPolicy()
    attempts = read.section(document, "", "attempts")
    timeouts = read.section(document, "", "timeouts")
    values = dict(
        mode=read.word(document, "", "mode", Mode, default.mode),
        rules=_rules(read, document, ""),
        xids=_xids(read, read.section(document, "", "xids")),
        drain=_drain(read, read.section(document, "", "drain"), "drain.") or default.drain,
        taint=_taint(read, read.section(document, "", "taint"), "taint.") or default.taint,
        attempts=_integers(read, attempts, "attempts.", Attempts, frozenset({"max"})) if attempts else default.attempts,
        min_reboot_interval_seconds=read.get(document, "", "minRebootIntervalSeconds", _count, "a whole number",
                                             default.min_reboot_interval_seconds),
        max_concurrent=read.get(document, "", "maxConcurrent", _count, "a whole number", default.max_concurrent),
        breaker=_breaker(read, read.section(document, "", "breaker"), "breaker.") or (
            Breaker() if "breaker" in document else default.breaker),
        pools=_pools(read, document),
        cloud=_cloud(read, read.section(document, "", "cloud")),
        timeouts=_integers(read, timeouts, "timeouts.", Timeouts) if timeouts else default.timeouts,
    )
    if read.problems:
        raise PolicyError(read.problems)
    return RemediationPolicy(**values)
