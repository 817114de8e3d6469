"""CEL selectors of DRA requests: parsed, checked against what the driver publishes, and evaluated.

Kubernetes evaluates each `selectors[].cel.expression` of a DeviceClass or a request with one variable,
`device`: `device.driver`, `device.attributes[domain].name` and `device.capacity[domain].name`. A typo in an
attribute name is not an error there: the attribute is missing on every device, the expression fails at
scheduling time, and the pod stays Pending. So we parse expressions with a real CEL parser (`celpy`) and check
every attribute and capacity they read against :mod:`gpu_operator.dra.driver`, before anything is created.

Evaluation (for `gpu-operator dra match`) follows Kubernetes' CEL environment: attributes of type version are
semantic versions (`semver('580.0.0')`, `isGreaterThan`, `isLessThan`, `compareTo`, `major`, `minor`, `patch`),
capacities are quantities (`quantity('80Gi')`, `compareTo`, `isGreaterThan`, `isLessThan`, `asInteger`), and the
string extensions `lowerAscii`, `upperAscii` are available. A runtime error (an attribute a device lacks) makes
the expression fail for that device, as it does in the scheduler.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import total_ordering
from typing import Any, Literal, cast
from collections.abc import Mapping, Sequence

import celpy
import celpy.celtypes as ct
from lark import Tree

from gpu_operator.dra.driver import REMOVED_ATTRIBUTES, DeviceFacts

__all__ = [
    "CelError",
    "Quantity",
    "Reference",
    "SemVer",
    "check_expression",
    "evaluate",
    "parse_quantity",
    "references",
]

#: The fields of `device` in Kubernetes' DRA CEL environment.
_DEVICE_FIELDS = ("driver", "attributes", "capacity", "allowMultipleAllocations")
_ENV = celpy.Environment()


class CelError(ValueError):
    """An expression that does not parse, or that evaluation could not complete."""


_Map = Literal["attributes", "capacity"]


@dataclass(frozen=True)
class Reference:
    """One attribute or capacity an expression reads: `device.<map>[domain].<name>`."""

    map: _Map
    domain: str
    name: str

    @property
    def qualified(self) -> str:
        return f"{self.domain}/{self.name}"


def _parse(expression: str) -> Tree:
    try:
        tree = _ENV.compile(expression)
    except celpy.CELParseError as error:
        where = f" at column {error.column}" if getattr(error, "column", None) else ""
        before = expression[:error.column or None]
        raise CelError(f"is not valid CEL (syntax error{where}: {before!r} <- here)") from None
    assert isinstance(tree, Tree)
    return tree


def _unwrap(node: Any) -> Any:
    while isinstance(node, Tree) and len(node.children) == 1 and node.data in (
        "member", "unary", "multiplication", "addition", "relation", "conditionaland", "conditionalor", "expr",
    ):
        node = node.children[0]
    return node


def _primary_child(node: Any, kind: str) -> Tree | None:
    """The `literal` or `ident` under a primary expression (celpy's tree: primary -> literal/ident -> token)."""
    node = _unwrap(node)
    if isinstance(node, Tree) and node.data == "primary" and len(node.children) == 1:
        node = node.children[0]
    return node if isinstance(node, Tree) and node.data == kind and node.children else None


def _string_literal(node: Any) -> str | None:
    literal = _primary_child(node, "literal")
    text = str(literal.children[0]) if literal is not None else ""
    return text[1:-1] if len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0] else None


def _identifier(node: Any) -> str | None:
    ident = _primary_child(node, "ident")
    return str(ident.children[0]) if ident is not None else None


def _device_map(node: Any) -> str | None:
    """`device.attributes` or `device.capacity` -> the map's name."""
    node = _unwrap(node)
    if isinstance(node, Tree) and node.data == "member_dot" and _identifier(node.children[0]) == "device":
        field = str(node.children[1])
        return field if field in ("attributes", "capacity") else None
    return None


def _domain_access(node: Any) -> tuple[str, str] | None:
    """`device.attributes['gpu.nvidia.com']` -> ("attributes", "gpu.nvidia.com")."""
    node = _unwrap(node)
    if isinstance(node, Tree) and node.data == "member_index":
        field = _device_map(node.children[0])
        domain = _string_literal(node.children[1])
        if field is not None and domain is not None:
            return field, domain
    return None


def _tree_references(tree: Tree) -> tuple[list[Reference], list[str]]:
    found: list[Reference] = []
    problems: list[str] = []
    for node in tree.iter_subtrees_topdown():
        if node.data == "member_dot":
            access = _domain_access(node.children[0])
            if access is not None:
                found.append(Reference(cast(_Map, access[0]), access[1], str(node.children[1])))
            elif _identifier(node.children[0]) == "device" and str(node.children[1]) not in _DEVICE_FIELDS:
                problems.append(f"device has no field {str(node.children[1])!r} (it has {', '.join(_DEVICE_FIELDS)})")
        elif node.data == "member_index":
            access = _domain_access(node.children[0])
            name = _string_literal(node.children[1])
            if access is not None and name is not None:
                found.append(Reference(cast(_Map, access[0]), access[1], name))
        elif node.data == "primary":
            name = _identifier(node)
            if name is not None and name != "device":
                problems.append(f"{name!r} is not defined: a DRA selector has one variable, device")
    return found, problems


def references(expression: str) -> list[Reference]:
    """Every attribute and capacity the expression reads; CelError when it does not parse."""
    return _tree_references(_parse(expression))[0]


def check_expression(expression: str, devices: Sequence[DeviceFacts]) -> list[str]:
    """Problems of a selector used on `devices` (the kinds its DeviceClass selects): syntax, unknown variables,
    and attributes or capacities none of those devices publishes. [] when it is fine."""
    try:
        tree = _parse(expression)
    except CelError as error:
        return [str(error)]
    found, problems = _tree_references(tree)
    kinds = "/".join(sorted({facts.kind for facts in devices}))
    for ref in found:
        if ref.map == "attributes":
            if any(facts.has_attribute(ref.qualified) for facts in devices):
                continue
            published = sorted({facts.qualified(name) for facts in devices for name in facts.attributes})
            hint = REMOVED_ATTRIBUTES.get(ref.name) if ref.domain in {f.driver for f in devices} else None
            fix = (f"it was removed in driver v25.8; select by {hint}" if hint is not None else
                   f"use one of: {', '.join(published)} (as device.attributes['<domain>'].<name>)")
            problems.append(f"reads attribute {ref.qualified!r}, which the DRA driver does not publish on "
                            f"{kinds} devices: {fix}")
        else:
            if any(facts.has_capacity(ref.qualified) for facts in devices):
                continue
            capacities = sorted({f"{f.driver}/{name}" for f in devices for name in f.capacities})
            problems.append(f"reads capacity {ref.qualified!r}, which the DRA driver does not publish on {kinds} "
                            f"devices: use one of: {', '.join(capacities) or 'none (these devices have no capacity)'}")
    return problems


_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$")
_SUFFIXES = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6, "G": Decimal(10) ** 9, "T": Decimal(10) ** 12, "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18, "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}


def parse_quantity(text: str) -> Decimal:
    """A Kubernetes quantity (`80Gi`, `1.5G`, `500m`, `1e3`) as a number; ValueError when it is not one."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a Kubernetes quantity such as '80Gi' or '1G'")
    number, exponent, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a Kubernetes quantity such as '80Gi' or '1G'") from None
    return value * Decimal(10) ** int(exponent[1:]) if exponent else value * _SUFFIXES[suffix or ""]


@total_ordering
class Quantity:
    """A quantity in CEL (Kubernetes' quantity library): compared with compareTo, isGreaterThan, isLessThan."""

    def __init__(self, value: Decimal | int | str) -> None:
        self.value = parse_quantity(value) if isinstance(value, str) else Decimal(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.value})"


_SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


@total_ordering
class SemVer:
    """A semantic version in CEL (Kubernetes' semver library); pre-release and build parts are ignored when
    comparing, as the driver publishes release versions only."""

    def __init__(self, text: str) -> None:
        match = _SEMVER.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not a semantic version such as '580.65.6'")
        self.text = text
        self.parts = tuple(int(part) for part in match.groups())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SemVer) and self.parts == other.parts

    def __lt__(self, other: SemVer) -> bool:
        return self.parts < other.parts

    def __hash__(self) -> int:
        return hash(self.parts)

    def __repr__(self) -> str:
        return f"SemVer({self.text})"


def _compare(a: Any, b: Any) -> ct.IntType:
    if type(a) is not type(b) or not isinstance(a, (Quantity, SemVer)):
        raise TypeError(f"compareTo needs two quantities or two versions, got {a!r} and {b!r}")
    return ct.IntType((a > b) - (a < b))


def _semver(text: Any) -> SemVer:
    return SemVer(str(text))


def _quantity(text: Any) -> Quantity:
    return Quantity(str(text))


_FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": lambda text: ct.BoolType(_QUANTITY.match(str(text)) is not None),
    "semver": _semver,
    "isSemver": lambda text: ct.BoolType(_SEMVER.match(str(text)) is not None),
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: ct.BoolType(_compare(a, b) > 0),
    "isLessThan": lambda a, b: ct.BoolType(_compare(a, b) < 0),
    "major": lambda v: ct.IntType(v.parts[0]),
    "minor": lambda v: ct.IntType(v.parts[1]),
    "patch": lambda v: ct.IntType(v.parts[2]),
    "asInteger": lambda q: ct.IntType(int(q.value)),
    "isInteger": lambda q: ct.BoolType(q.value == q.value.to_integral_value()),
    "asApproximateFloat": lambda q: ct.DoubleType(float(q.value)),
    "lowerAscii": lambda s: ct.StringType(str(s).lower()),
    "upperAscii": lambda s: ct.StringType(str(s).upper()),
}


def _cel_value(value: Any) -> Any:
    if isinstance(value, (Quantity, SemVer)):
        return value
    if isinstance(value, bool):
        return ct.BoolType(value)
    if isinstance(value, int):
        return ct.IntType(value)
    if isinstance(value, str):
        return ct.StringType(value)
    if isinstance(value, Mapping):
        return ct.MapType({ct.StringType(k): _cel_value(v) for k, v in value.items()})
    raise TypeError(f"no CEL value for {value!r}")


def evaluate(expression: str, device: Mapping[str, Any]) -> bool:
    """Whether `device` ({driver, attributes: {domain: {name: value}}, capacity: {...}}, with SemVer and Quantity
    values) satisfies the expression. CelError when it does not parse, or does not evaluate for this device."""
    tree = _parse(expression)
    program = _ENV.program(tree, functions=_FUNCTIONS)
    try:
        result = program.evaluate({"device": _cel_value(device)})
    except celpy.CELEvalError as error:
        raise CelError(_eval_message(error)) from None
    if isinstance(result, celpy.CELEvalError):
        raise CelError(_eval_message(result))
    if not isinstance(result, ct.BoolType):
        raise CelError(f"evaluates to {result!r}, not a boolean")
    return bool(result)


def _eval_message(error: Exception) -> str:
    return str(error.args[0]) if error.args else str(error)
