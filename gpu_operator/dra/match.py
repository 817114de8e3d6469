"""A claim's device requests evaluated against published devices, as the scheduler's allocator would.

For each request of a ResourceClaim (or of a ResourceClaimTemplate's claim spec) the candidates are the devices
its DeviceClass selects and that pass every one of its own selectors; `exactly` asks for `count` of them
(`allocationMode: ExactCount`, the default, count 1) or for every candidate (`All`), `firstAvailable` takes the
first subrequest that can be satisfied. `constraints[].matchAttribute` then requires the devices of the requests
it names to share that attribute's value (for example one `resource.kubernetes.io/pcieRoot`). Devices are never
shared between requests.

The search is the scheduler's (k8s.io/dynamic-resource-allocation structured/internal/stable allocator_stable.go,
`allocateOne`, `isSelectable`, `selectorsMatch`): requests in order, each device slot filled by scanning the
node's devices in slice order, depth first, the first solution taken. A selector that fails to evaluate on a
device the scan reaches (a missing attribute, a version compared with a string) is no "no match": it aborts the
whole allocation with a CEL runtime error, which is what the scheduler reports for the pod; an `All` request
evaluates every device before the search, so an error anywhere aborts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Mapping, Sequence

from gpu_operator.dra.slices import PublishedDevice
from gpu_operator.facts.dra_cel import CelError, check_expression, evaluate
from gpu_operator.facts.dra_driver import DEVICE_CLASSES, DeviceClassFacts, device_class

__all__ = ["ClaimError", "Candidate", "RequestResult", "MatchResult", "match_claim", "claim_spec"]


class ClaimError(ValueError):
    """The claim document cannot be evaluated: a problem with its path and the fix."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


@dataclass(frozen=True)
class Candidate:
    """One device and why it does (or does not) satisfy a request's selectors."""

    device: PublishedDevice
    matches: bool
    reason: str = ""
    error: str = ""
    """The scheduler's words when a selector failed to evaluate on this device (`class X: selector #0: CEL
    runtime error: no such key: profile`); empty when it evaluated."""


@dataclass
class RequestResult:
    """One (sub)request: its DeviceClass, how many it wants, and each device's verdict."""

    name: str
    device_class: str
    wanted: int | None  # None: All
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def matching(self) -> list[PublishedDevice]:
        return [c.device for c in self.candidates if c.matches]


@dataclass
class MatchResult:
    """The verdict for a claim: per request the candidates, and the allocation found (or why none)."""

    claim: str
    requests: list[RequestResult]
    allocation: dict[str, list[str]] | None
    reason: str = ""
    error: str = ""
    """Set when the scheduler's search stops at a CEL runtime error: the pod stays Pending with this error."""


def claim_spec(document: Mapping[str, Any]) -> tuple[str, Mapping[str, Any], str]:
    """(name, claim spec, path of the spec) of a ResourceClaim or ResourceClaimTemplate document."""
    kind = document.get("kind")
    name = str((document.get("metadata") or {}).get("name", "<unnamed>"))
    if kind == "ResourceClaim":
        return name, document.get("spec") or {}, "spec"
    if kind == "ResourceClaimTemplate":
        return name, (document.get("spec") or {}).get("spec") or {}, "spec.spec"
    raise ClaimError("kind", f"is {kind!r}: give a ResourceClaim or a ResourceClaimTemplate (resource.k8s.io/v1)")


def _class(path: str, name: Any) -> DeviceClassFacts:
    cls = device_class(str(name)) if name else None
    if cls is None:
        known = ", ".join(c.name for c in DEVICE_CLASSES)
        raise ClaimError(f"{path}.deviceClassName", f"{name!r} is not a DeviceClass of NVIDIA's DRA driver: use one "
                                                    f"of {known}")
    return cls


def _selectors(path: str, exact: Mapping[str, Any], cls: DeviceClassFacts) -> list[str]:
    expressions = []
    for index, selector in enumerate(exact.get("selectors") or []):
        where = f"{path}.selectors[{index}].cel.expression"
        expression = ((selector or {}).get("cel") or {}).get("expression")
        if not isinstance(expression, str):
            raise ClaimError(where, "missing: every selector is a CEL expression")
        problems = check_expression(expression, [cls.facts])
        if problems:
            raise ClaimError(where, "; ".join(problems))
        expressions.append(expression)
    return expressions


def _verdict(device: PublishedDevice, cls: DeviceClassFacts, expressions: Sequence[str], claim: str) -> Candidate:
    cel_device = device.cel_device()
    labelled = [(f"DeviceClass {cls.name}", f"class {cls.name}", 0, cls.expression),
                *[(f"selector {i}", f"claim {claim}", i, e) for i, e in enumerate(expressions)]]
    for label, owner, index, expression in labelled:
        try:
            if not evaluate(expression, cel_device):
                return Candidate(device, False, f"{label} is false")
        except CelError as error:
            return Candidate(device, False, f"{label} failed: {error}",
                             f"{owner}: selector #{index}: CEL runtime error: {error}")
    return Candidate(device, True)


def _request(path: str, name: str, exact: Mapping[str, Any], devices: Sequence[PublishedDevice],
             claim: str) -> RequestResult:
    cls = _class(path, exact.get("deviceClassName"))
    expressions = _selectors(path, exact, cls)
    mode = exact.get("allocationMode", "ExactCount")
    if mode not in ("ExactCount", "All"):
        raise ClaimError(f"{path}.allocationMode", f"{mode!r} is neither ExactCount nor All")
    count = exact.get("count", 1)
    if mode == "ExactCount" and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
        raise ClaimError(f"{path}.count", f"{count!r} must be a positive whole number")
    result = RequestResult(name, cls.name, count if mode == "ExactCount" else None)
    result.candidates = [_verdict(device, cls, expressions, claim) for device in devices]
    return result


def _constraint_value(device: PublishedDevice, attribute: str) -> Any:
    domain, _, short = attribute.rpartition("/")
    return device.attributes.get(short if domain == device.driver else attribute)


def _satisfies(picked: Mapping[str, list[PublishedDevice]], constraints: Sequence[Mapping[str, Any]]) -> bool:
    for constraint in constraints:
        attribute = constraint.get("matchAttribute")
        if not attribute:
            continue
        names = constraint.get("requests") or list(picked)
        values = [_constraint_value(d, attribute) for name in names if name in picked for d in picked[name]]
        if any(value is None for value in values) or len(set(map(repr, values))) > 1:
            return False
    return True


class _Aborted(Exception):
    """The search stopped at an error, as the scheduler's allocator returns one."""


class _Search:
    """The allocator's depth-first search over `options` (per request, its alternatives: one for `exactly`, the
    subrequests of `firstAvailable` in order)."""

    def __init__(self, claim: str, options: Sequence[Sequence[RequestResult]],
                 constraints: Sequence[Mapping[str, Any]]) -> None:
        self.claim, self.options, self.constraints = claim, options, constraints
        self.picked: dict[str, list[PublishedDevice]] = {}
        self.used: set[str] = set()

    def validate(self) -> None:
        """validateDeviceRequest: an `All` request evaluates every device up front."""
        for alternatives in self.options:
            for sub in alternatives:
                if sub.wanted is None:
                    for candidate in sub.candidates:
                        if candidate.error:
                            raise _Aborted(candidate.error)

    def run(self) -> dict[str, list[PublishedDevice]] | None:
        self.validate()
        return dict(self.picked) if self._request(0) else None

    def _request(self, index: int) -> bool:
        if index == len(self.options):
            return True
        return any(self._fill(index, sub, 0) for sub in self.options[index])

    def _take(self, sub: RequestResult, device: PublishedDevice) -> bool:
        self.picked.setdefault(sub.name, []).append(device)
        if _satisfies(self.picked, self.constraints):
            self.used.add(device.name)
            return True
        self._drop(sub, device)
        return False

    def _drop(self, sub: RequestResult, device: PublishedDevice) -> None:
        self.picked[sub.name].remove(device)
        if not self.picked[sub.name]:
            del self.picked[sub.name]
        self.used.discard(device.name)

    def _fill(self, index: int, sub: RequestResult, slot: int) -> bool:
        if sub.wanted is None:
            everything = sub.matching
            if not everything:
                return False
            if slot == len(everything):
                return self._request(index + 1)
            device = everything[slot]
            if device.name in self.used:
                return False
            if not self._take(sub, device):
                raise _Aborted(f"claim {self.claim}, request {sub.name}: cannot add device {device.name} because a "
                               "claim constraint would not be satisfied")
            if self._fill(index, sub, slot + 1):
                return True
            self._drop(sub, device)
            return False
        if slot == sub.wanted:
            return self._request(index + 1)
        for candidate in sub.candidates:
            if candidate.device.name in self.used:
                continue
            if candidate.error:
                raise _Aborted(candidate.error)
            if not candidate.matches or not self._take(sub, candidate.device):
                continue
            if self._fill(index, sub, slot + 1):
                return True
            self._drop(sub, candidate.device)
        return False


def match_claim(document: Mapping[str, Any], devices: Sequence[PublishedDevice]) -> MatchResult:
    """Evaluate a ResourceClaim or ResourceClaimTemplate against `devices`; ClaimError for a bad claim."""
    claim, spec, path = claim_spec(document)
    namespace = (document.get("metadata") or {}).get("namespace")
    owner = f"{namespace}/{claim}" if namespace else claim
    requests = (spec.get("devices") or {}).get("requests") or []
    if not requests:
        raise ClaimError(f"{path}.devices.requests", "lists no request: add one (name, exactly.deviceClassName)")
    options: list[list[RequestResult]] = []
    for index, request in enumerate(requests):
        where = f"{path}.devices.requests[{index}]"
        name = request.get("name")
        if not name:
            raise ClaimError(f"{where}.name", "missing: every request has a name")
        if request.get("exactly") is not None:
            options.append([_request(f"{where}.exactly", name, request["exactly"], devices, owner)])
        elif request.get("firstAvailable"):
            options.append([
                _request(f"{where}.firstAvailable[{i}]", name, sub, devices, owner)
                for i, sub in enumerate(request["firstAvailable"])
            ])
        else:
            raise ClaimError(where, "needs exactly (one DeviceClass) or firstAvailable (alternatives)")
    results = [sub for alternatives in options for sub in alternatives]
    constraints = (spec.get("devices") or {}).get("constraints") or []
    try:
        found = _Search(owner, options, constraints).run()
    except _Aborted as aborted:
        return MatchResult(claim, results, None, f"the scheduler stops with an error: {aborted}", str(aborted))
    if found is None:
        short = [f"{r.name} wants {'all' if r.wanted is None else r.wanted} of {len(r.matching)} matching"
                 for r in results]
        reason = "no combination of devices satisfies every request" + (
            " and constraint" if constraints else "") + f" ({'; '.join(short)})"
        return MatchResult(claim, results, None, reason)
    return MatchResult(claim, results, {name: [d.name for d in picked] for name, picked in found.items()})
