"""Objects written the way the Kubernetes API server stores them, for the fields we set.

The API server does not keep every value as it is sent. It reprints each quantity in its own spelling
(`1024Mi` → `1Gi`, see :mod:`gpu_operator.facts.quantity`), rounds the values of resource lists up to 1m, and
fills defaults into what a request leaves out. Server-side apply and `pulumi refresh` compare what we send with
what is stored: field by field, and an *atomic* field (a struct or list that apply treats as one value) as a
whole. So a quantity in another spelling, or an atomic struct that the server completes with a default, differs
from the stored value on every apply: a diff on refresh, and a conflict with the manager that wrote the stored
value (Helm, when we adopt its install with `upsertExistingObjects`).

:func:`as_stored` rewrites a rendered object, or a chart's values, into the stored form. Fields are found by
the key that holds them and the key around it (list positions do not count):

* resource lists, whose values the server's defaulting rounds up to 1m and reprints: `resources.requests` and
  `resources.limits` (containers, init containers, pods, volume claim templates) and the Network Operator's
  `containerResources[].requests`/`limits`, which it copies into containers;
* other quantities, reprinted: `emptyDir.sizeLimit`, `resourceFieldRef.divisor`, a RuntimeClass's
  `overhead.podFixed`, a DRA request's `capacity.requests`;
* atomic structs the server completes: a `fieldRef` (ObjectFieldSelector) gets `apiVersion: v1`, a
  `resourceFieldRef` (ResourceFieldSelector) `divisor: "0"` (an unset divisor reads back as `"0"`).

Defaults the server fills into fields apply merges one by one (probe timings, `imagePullPolicy`, `hostPath.type`,
...) stay out: we do not set those fields, so nothing of ours differs. A DRA request's `allocationMode` and `count`
(an atomic list) are rendered at their source, :mod:`gpu_operator.render.dra.objects`.

Quantities are strings or integers; anything else at a quantity's place (a value Pulumi resolves later) is left
as it is, and a float or bool is refused: its text depends on how it is encoded on the way to the server.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

from gpu_operator.facts.quantity import canonical_quantity

__all__ = ["ATOMIC_DEFAULTS", "QUANTITIES", "QUANTITY_MAPS", "RESOURCE_LISTS", "as_stored"]

#: (enclosing key, key) of resource lists: every value a quantity, rounded up to 1m by the server.
RESOURCE_LISTS = frozenset({
    ("resources", "requests"),
    ("resources", "limits"),
    ("containerResources", "requests"),
    ("containerResources", "limits"),
})
#: (enclosing key, key) of other maps of quantities.
QUANTITY_MAPS = frozenset({("overhead", "podFixed"), ("capacity", "requests")})
#: (enclosing key, key) of single quantities.
QUANTITIES = frozenset({("emptyDir", "sizeLimit"), ("resourceFieldRef", "divisor")})
#: Key of an atomic struct → (the field that tells it apart, the defaults the server fills in).
ATOMIC_DEFAULTS: dict[str, tuple[str, dict[str, str]]] = {
    "fieldRef": ("fieldPath", {"apiVersion": "v1"}),
    "resourceFieldRef": ("resource", {"divisor": "0"}),
}


def _by_enclosing_key() -> dict[str, dict[str, str]]:
    """The places above by enclosing key: enclosing key → key → how its value is stored."""
    places: dict[str, dict[str, str]] = {}
    for group, kind in ((RESOURCE_LISTS, "resource list"), (QUANTITY_MAPS, "quantity map"), (QUANTITIES, "quantity")):
        for outer, key in group:
            places.setdefault(outer, {})[key] = kind
    return places


_PLACES = _by_enclosing_key()


def _quantity(value: Any, resource_list: bool) -> Any:
    """A string or number in the server's spelling; anything else (resolved later) as it is."""
    if isinstance(value, (str, int, float)):  # bool is an int; canonical_quantity refuses floats and bools
        return canonical_quantity(value, resource_list=resource_list)
    return value


def _stored(kind: str, value: Any, key: str) -> Any:
    """The value at a quantity's place: one quantity, or a map of them."""
    if kind == "quantity":
        return _quantity(value, False)
    if not isinstance(value, Mapping):
        return _walk(value, key)
    return {name: _quantity(item, kind == "resource list") for name, item in value.items()}


def _mapping(node: Mapping[str, Any], outer: str) -> dict[str, Any]:
    places = _PLACES.get(outer)
    if places is None:
        out = {key: _walk(value, key) for key, value in node.items()}
    else:
        out = {key: _stored(places[key], value, key) if key in places else _walk(value, key)
               for key, value in node.items()}
    if outer in ATOMIC_DEFAULTS:
        marker, defaults = ATOMIC_DEFAULTS[outer]
        if marker in out:
            out = {**out, **{key: value for key, value in defaults.items() if key not in out}}
    return out


def _walk(node: Any, outer: str) -> Any:
    if isinstance(node, Mapping):
        return _mapping(node, outer)
    if isinstance(node, list | tuple):
        return [_walk(item, outer) for item in node]
    return node


def as_stored(document: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `document` (an object, or a chart's values) in the form the API server stores: quantities in
    its spelling, atomic structs with its defaults. The input is not changed; values other than mappings, lists
    and quantities are shared, not copied."""
    return _mapping(document, "")
