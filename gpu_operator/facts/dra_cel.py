"""CEL selectors of DRA requests: parsed, checked against what the driver publishes, and evaluated.

Kubernetes evaluates each `selectors[].cel.expression` of a DeviceClass or a request with one variable,
`device`: `device.driver`, `device.attributes[domain].name` and `device.capacity[domain].name`. A typo in an
attribute name is not an error there: the attribute is missing on every device, the expression fails at
scheduling time, and the pod stays Pending. So we parse expressions with a real CEL parser (`celpy`) and check
every attribute and capacity they read against :mod:`gpu_operator.facts.dra_driver`, before anything is created.

Evaluation (for `gpu-operator dra match`) follows Kubernetes' CEL environment (k8s.io/apiserver pkg/cel
semver.go, quantity.go and library/semverlib.go, quantity.go; k8s.io/dynamic-resource-allocation cel/compile.go):
attributes of type version are semantic versions (`semver('580.0.0')`, `isGreaterThan`, `isLessThan`,
`compareTo`, `major`, `minor`, `patch`), capacities are quantities (`quantity('80Gi')`, `compareTo`,
`isGreaterThan`, `isLessThan`, `asInteger`, `add`, `sub`, `sign`), and the string extensions `lowerAscii`,
`upperAscii` are available. Neither library type has an ordering: `<` on one is an error, and `==` with a value of
another type is a `no such overload` error when the version or quantity is on the left (and plain false when it is
on the right). Where the checker can see such a mistake (`driverVersion < semver('1.0.0')`, a capacity compared
with a string) :func:`check_expression` reports it, as the API server refuses the claim; otherwise it is a runtime
error (:class:`CelError`, in cel-go's words: `no such overload`, `no such key: <name>`), which stops the
scheduler's allocation (see :mod:`gpu_operator.dra.match`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, cast
from collections.abc import Mapping, Sequence

import celpy
import celpy.evaluation
import celpy.celtypes as ct
from lark import Tree

from gpu_operator.facts.dra_driver import REMOVED_ATTRIBUTES, DeviceFacts

__all__ = [
    "CelError",
    "Quantity",
    "QuantitySum",
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


#: The static type of a library call's result, as Kubernetes' CEL checker knows it (semver.go, quantity.go).
_RESULT_TYPES = {
    "semver": "kubernetes.Semver", "quantity": "kubernetes.Quantity", "add": "kubernetes.Quantity",
    "sub": "kubernetes.Quantity", "major": "int", "minor": "int", "patch": "int", "compareTo": "int",
    "asInteger": "int", "sign": "int", "isGreaterThan": "bool", "isLessThan": "bool", "isInteger": "bool",
    "isSemver": "bool", "isQuantity": "bool", "asApproximateFloat": "double", "lowerAscii": "string",
    "upperAscii": "string", "contains": "bool", "startsWith": "bool", "endsWith": "bool", "matches": "bool",
}
_LIBRARY_TYPE_NAMES = ("kubernetes.Semver", "kubernetes.Quantity")
_RELATIONS = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
              "relation_eq": "_==_", "relation_ne": "_!=_"}
_WRAPPERS = ("expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary",
             "member", "primary")


def _static_type(node: Any) -> str | None:
    """The type the checker gives an operand, where it is fixed: a literal, a capacity (the device's capacity map
    holds quantities) or a library call; None for dyn (an attribute is `any`, its type known only at run time)."""
    while isinstance(node, Tree) and node.data in _WRAPPERS and len(node.children) == 1:
        node = node.children[0]
    if not isinstance(node, Tree):
        return None
    if node.data == "literal":
        text = str(node.children[0])
        if text[:1] in "'\"" or text[:2].lower() in ("r'", 'r"', "b'", 'b"'):
            return "bytes" if text[:1].lower() == "b" else "string"
        if text in ("true", "false"):
            return "bool"
        if text == "null":
            return None
        return "uint" if text.endswith(("u", "U")) else "double" if any(c in text for c in ".eE") else "int"
    if node.data in ("member_dot", "member_index"):
        access = _domain_access(node.children[0])
        return "kubernetes.Quantity" if access is not None and access[0] == "capacity" else None
    if node.data == "ident_arg":
        return _RESULT_TYPES.get(str(node.children[0])) if str(node.children[0]) in ("semver", "quantity") else None
    if node.data == "member_dot_arg":
        return _RESULT_TYPES.get(str(node.children[1]))
    return None


def _type_errors(tree: Tree) -> list[str]:
    """Comparisons Kubernetes' CEL checker refuses, so the API server rejects the claim (compile error): ordering
    a version or quantity with `<`, `<=`, `>`, `>=` (neither type has those operators), and `==` / `!=` between
    two different fixed types (a version and a string). Comparing with an attribute (dyn) passes the checker."""
    errors: list[str] = []
    for node in tree.iter_subtrees_topdown():
        if node.data != "relation" or len(node.children) != 2 or not isinstance(node.children[0], Tree):
            continue
        operator = _RELATIONS.get(node.children[0].data)
        if operator is None:
            continue
        left, right = _static_type(node.children[0].children[0]), _static_type(node.children[1])
        shown = f"({left or 'any'}, {right or 'any'})"
        if operator in ("_==_", "_!=_"):
            refused = left is not None and right is not None and left != right and not (
                {left, right} <= {"int", "uint", "double"})
        else:
            refused = left in _LIBRARY_TYPE_NAMES or right in _LIBRARY_TYPE_NAMES
        if refused:
            hint = (" (versions and quantities are ordered with isGreaterThan, isLessThan or compareTo)"
                    if operator not in ("_==_", "_!=_") else "")
            errors.append(f"is refused by the API server: found no matching overload for '{operator}' applied to "
                          f"'{shown}'{hint}")
    return errors


#: What the API server requires a selector to evaluate to (k8s.io/dynamic-resource-allocation cel/compile.go
#: `CompileCELExpression`: bool, or the unknown type of an attribute, whose value is checked at run time).
_RESULT_TYPE = "bool"


def _result_type_errors(tree: Tree) -> list[str]:
    """A selector whose value has a fixed type other than bool (a string literal, a capacity, a version) is
    refused when the claim is created."""
    node: Any = tree
    while isinstance(node, Tree) and node.data in _WRAPPERS and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, Tree) and node.data in ("relation", "conditionalor", "conditionaland", "unary"):
        return []
    found = _static_type(node)
    if found is None or found == _RESULT_TYPE:
        return []
    return [f"is refused by the API server: must evaluate to bool or the unknown type, not {found}; a selector "
            "is a condition, e.g. a comparison with ==, or a call such as isGreaterThan"]


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
    problems += _type_errors(tree) + _result_type_errors(tree)
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


_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)\Z")
_SUFFIXES = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6, "G": Decimal(10) ** 9, "T": Decimal(10) ** 12, "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18, "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}


def parse_quantity(text: str) -> Decimal:
    """A Kubernetes quantity (`80Gi`, `1.5G`, `500m`, `1e3`) as a number; ValueError when it is not one (white
    space included: `resource.ParseQuantity` trims none)."""
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a Kubernetes quantity such as '80Gi' or '1G'")
    number, exponent, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a Kubernetes quantity such as '80Gi' or '1G'") from None
    return value * Decimal(10) ** int(exponent[1:]) if exponent else value * _SUFFIXES[suffix or ""]


class Quantity:
    """A quantity in CEL (Kubernetes' quantity library): compared with compareTo, isGreaterThan, isLessThan.

    Like Kubernetes' `kubernetes.Quantity`, it has equality with another quantity only (`==` against a string or
    a number is a `no such overload` error) and no ordering: `<` is an error, `compareTo` is the comparison.
    `add` and `sub` give a :class:`QuantitySum`, which Kubernetes hands back by reference: the comparison functions
    and `==` with it on the left accept it, `==` with it on the right does not (Quantity.Equal asserts a value).
    """

    def __init__(self, value: Decimal | int | str) -> None:
        self.value = parse_quantity(value) if isinstance(value, str) else Decimal(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.value})"


class QuantitySum(Quantity):
    """The result of `add` / `sub`: a quantity everywhere except on the right of `==`."""


def _identifiers(text: str) -> tuple[str, ...]:
    return tuple(text.split(".")) if text else ()


#: Semantic versions as github.com/blang/semver/v4 `Parse` (which Kubernetes' semver library uses) accepts them:
#: exactly three numbers without leading zeros, then optional pre-release and build identifiers.
_SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
                     r"(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
                     r"(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
                     r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?\Z")


class SemVer:
    """A semantic version in CEL (Kubernetes' semver library, `kubernetes.Semver`).

    It has equality with another version only (pre-release counts, build metadata does not; `==` against a string
    is a `no such overload` error, while a string on the left of `==` is merely unequal) and no ordering: `<` is an
    error, versions are ordered with `isGreaterThan`, `isLessThan` and `compareTo` (:meth:`compare`).
    """

    def __init__(self, text: str) -> None:
        match = _SEMVER.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not a semantic version such as '580.65.6'")
        self.text = text
        self.parts = tuple(int(part) for part in match.groups()[:3])
        self.prerelease = _identifiers(match.group(4) or "")

    def compare(self, other: SemVer) -> int:
        """-1, 0 or 1 as semantic versioning orders them (a pre-release comes before its release)."""
        if self.parts != other.parts:
            return (self.parts > other.parts) - (self.parts < other.parts)
        if self.prerelease == other.prerelease:
            return 0
        if not self.prerelease or not other.prerelease:
            return 1 if not self.prerelease else -1
        for mine, theirs in zip(self.prerelease, other.prerelease):
            if mine == theirs:
                continue
            if mine.isdigit() and theirs.isdigit():
                return 1 if int(mine) > int(theirs) else -1
            if mine.isdigit() != theirs.isdigit():
                return -1 if mine.isdigit() else 1
            return 1 if mine > theirs else -1
        return (len(self.prerelease) > len(other.prerelease)) - (len(self.prerelease) < len(other.prerelease))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SemVer) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.parts, self.prerelease))

    def __repr__(self) -> str:
        return f"SemVer({self.text})"


_NO_OVERLOAD = "no such overload"
_INT64 = 1 << 63


def _compare(a: Any, b: Any) -> ct.IntType:
    if isinstance(a, SemVer) and isinstance(b, SemVer):
        return ct.IntType(a.compare(b))
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return ct.IntType((a.value > b.value) - (a.value < b.value))
    raise TypeError(_NO_OVERLOAD)


def _semver(text: Any) -> SemVer:
    """`semver(<string>)`; a string that is no version fails with the parser's words (blang/semver v4 `Parse`)."""
    if not isinstance(text, str):
        raise TypeError(_NO_OVERLOAD)
    if not text:
        raise ValueError("Version string empty")
    if len(text.split(".", 2)) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    return SemVer(str(text))


def _quantity(text: Any) -> Quantity:
    if not isinstance(text, str):
        raise TypeError(_NO_OVERLOAD)
    return Quantity(str(text))


def _as_int64(q: Any) -> int | None:
    if not isinstance(q, Quantity):
        raise TypeError(_NO_OVERLOAD)
    value = q.value
    if value != value.to_integral_value() or not -_INT64 <= value < _INT64:
        return None
    return int(value)


def _as_integer(q: Any) -> ct.IntType:
    value = _as_int64(q)
    if value is None:
        raise ValueError("cannot convert value to integer")
    return ct.IntType(value)


def _arithmetic(sign: int) -> Any:
    def apply(a: Any, b: Any) -> QuantitySum:
        if not isinstance(a, Quantity) or not isinstance(b, (Quantity, ct.IntType)) or isinstance(b, ct.BoolType):
            raise TypeError(_NO_OVERLOAD)
        other = b.value if isinstance(b, Quantity) else Decimal(int(b))
        return QuantitySum(a.value + sign * other)
    return apply


def _version_part(index: int) -> Any:
    def part(v: Any) -> ct.IntType:
        if not isinstance(v, SemVer):
            raise TypeError(_NO_OVERLOAD)
        return ct.IntType(v.parts[index])
    return part


_LIBRARY_TYPES = (SemVer, Quantity)


def _equal(a: Any, b: Any) -> Any:
    """`==` as cel-go evaluates it: the left operand's Equal decides. A version or quantity on the left errs on
    any other type (Semver.Equal / Quantity.Equal: MaybeNoSuchOverloadErr); anything else on the left is merely
    unequal to one (String.Equal and the like return false). An error on either side stays the error."""
    for operand in (a, b):
        if isinstance(operand, celpy.CELEvalError):
            return operand
    if isinstance(a, _LIBRARY_TYPES):
        # Equal asserts the other side is a value of its own type: a version, or a quantity held by value (the
        # result of add / sub is held by reference, so it is accepted on the left only)
        same = isinstance(b, SemVer) if isinstance(a, SemVer) else (
            isinstance(b, Quantity) and not isinstance(b, QuantitySum))
        if not same:
            raise TypeError(_NO_OVERLOAD)
        return ct.BoolType(a == b)
    if isinstance(b, _LIBRARY_TYPES):
        return ct.BoolType(False)
    return _BASE_EQ(a, b)


def _not_equal(a: Any, b: Any) -> Any:
    result = _equal(a, b)
    return result if isinstance(result, Exception) else ct.BoolType(not result)


def _ordered(base: Any) -> Any:
    """`<`, `<=`, `>`, `>=`: versions and quantities have no ordering operators in Kubernetes' CEL."""
    def compare(a: Any, b: Any) -> Any:
        for operand in (a, b):
            if isinstance(operand, celpy.CELEvalError):
                return operand
        if isinstance(a, _LIBRARY_TYPES) or isinstance(b, _LIBRARY_TYPES):
            raise TypeError(_NO_OVERLOAD)
        return base(a, b)
    return compare


_BASE = celpy.evaluation.base_functions
_BASE_EQ = _BASE["_==_"]

_FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": lambda text: ct.BoolType(_QUANTITY.match(str(text)) is not None),
    "semver": _semver,
    "isSemver": lambda text: ct.BoolType(_SEMVER.match(str(text)) is not None),
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: ct.BoolType(_compare(a, b) > 0),
    "isLessThan": lambda a, b: ct.BoolType(_compare(a, b) < 0),
    "major": _version_part(0),
    "minor": _version_part(1),
    "patch": _version_part(2),
    "asInteger": _as_integer,
    "isInteger": lambda q: ct.BoolType(_as_int64(q) is not None),
    "asApproximateFloat": lambda q: ct.DoubleType(float(q.value)),
    "sign": lambda q: ct.IntType((q.value > 0) - (q.value < 0)),
    "add": _arithmetic(1),
    "sub": _arithmetic(-1),
    "lowerAscii": lambda s: ct.StringType(str(s).lower()),
    "upperAscii": lambda s: ct.StringType(str(s).upper()),
    "_==_": _equal,
    "_!=_": _not_equal,
    **{op: _ordered(_BASE[op]) for op in ("_<_", "_<=_", "_>_", "_>=_")},
}


class _DomainMap(ct.MapType):
    """`device.attributes` / `device.capacity`: a domain the device has nothing in reads as an empty map, as in
    Kubernetes (newStringInterfaceMapWithDefault), so only the name after it can be missing."""

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(key) if key in self else ct.MapType({})


def _cel_device(device: Mapping[str, Any]) -> ct.MapType:
    value = _cel_value(device)
    for field in ("attributes", "capacity"):
        if field in value:
            value[ct.StringType(field)] = _DomainMap(value[ct.StringType(field)])
    return value


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
        result = program.evaluate({"device": _cel_device(device)})
    except celpy.CELEvalError as error:
        raise CelError(_eval_message(error)) from None
    except (TypeError, ValueError, ArithmeticError) as error:
        raise CelError(_runtime_message(error)) from None
    if isinstance(result, celpy.CELEvalError):
        raise CelError(_eval_message(result))
    if not isinstance(result, ct.BoolType):
        raise CelError(f"evaluates to {result!r}, not a boolean")
    return bool(result)


def _runtime_message(error: BaseException) -> str:
    """An evaluation error in cel-go's words: a wrong type is `no such overload`, a missing map key `no such key`."""
    if isinstance(error, TypeError):
        return _NO_OVERLOAD
    if isinstance(error, KeyError):
        return f"no such key: {error.args[0] if error.args else ''}".rstrip(": ")
    return str(error.args[0]) if error.args else str(error)


_MISSING_MEMBER = re.compile(r"^no such member in mapping: '(.*)'\Z")


def _eval_message(error: celpy.CELEvalError) -> str:
    """celpy's error in cel-go's words (`no such overload`, `no such key: <name>`, the library's own message)."""
    text = str(error.args[0]) if error.args else str(error)
    kind = error.args[1] if len(error.args) >= 2 else None
    details = error.args[2] if len(error.args) >= 3 and isinstance(error.args[2], tuple) else ()
    missing = _MISSING_MEMBER.match(text)
    if missing is not None:
        return f"no such key: {missing.group(1)}"
    if kind is KeyError:
        return f"no such key: {details[0]}" if details else "no such key"
    if isinstance(kind, type) and issubclass(kind, TypeError):
        return _NO_OVERLOAD
    if kind is ValueError and details:
        return str(details[0])
    return text
