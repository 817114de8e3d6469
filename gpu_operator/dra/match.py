"""A claim's device requests evaluated against published devices, as the scheduler's allocator would.

For each request of a ResourceClaim (or of a ResourceClaimTemplate's claim spec) the candidates are the devices
its DeviceClass selects and that pass every one of its own selectors; `exactly` asks for `count` of them
(`allocationMode: ExactCount`, the default, count 1) or for every candidate (`All`), `firstAvailable` takes the
first subrequest that can be satisfied. `constraints[].matchAttribute` then requires the devices of the requests
it names to share that attribute's value (for example one `resource.kubernetes.io/pcieRoot`); the search tries
device combinations until one satisfies every constraint. Devices are never shared between requests.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterator, Mapping, Sequence

from gpu_operator.dra.cel import CelError, check_expression, evaluate
from gpu_operator.dra.driver import DEVICE_CLASSES, DeviceClassFacts, device_class
from gpu_operator.dra.slices import PublishedDevice

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


def _verdict(device: PublishedDevice, cls: DeviceClassFacts, expressions: Sequence[str]) -> Candidate:
    cel_device = device.cel_device()
    for label, expression in [(f"DeviceClass {cls.name}", cls.expression), *[
            (f"selector {i}", e) for i, e in enumerate(expressions)]]:
        try:
            if not evaluate(expression, cel_device):
                return Candidate(device, False, f"{label} is false")
        except CelError as error:
            return Candidate(device, False, f"{label} failed: {error}")
    return Candidate(device, True)


def _request(path: str, name: str, exact: Mapping[str, Any], devices: Sequence[PublishedDevice]) -> RequestResult:
    cls = _class(path, exact.get("deviceClassName"))
    expressions = _selectors(path, exact, cls)
    mode = exact.get("allocationMode", "ExactCount")
    if mode not in ("ExactCount", "All"):
        raise ClaimError(f"{path}.allocationMode", f"{mode!r} is neither ExactCount nor All")
    count = exact.get("count", 1)
    if mode == "ExactCount" and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
        raise ClaimError(f"{path}.count", f"{count!r} must be a positive whole number")
    result = RequestResult(name, cls.name, count if mode == "ExactCount" else None)
    result.candidates = [_verdict(device, cls, expressions) for device in devices]
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


def _choices(request: RequestResult, used: set[str]) -> Iterator[list[PublishedDevice]]:
    free = [d for d in request.matching if d.name not in used]
    if request.wanted is None:
        if free and len(free) == len(request.matching):
            yield free
        return
    yield from (list(combo) for combo in itertools.combinations(free, request.wanted))


def _search(options: Sequence[Sequence[RequestResult]], constraints: Sequence[Mapping[str, Any]]
            ) -> dict[str, list[PublishedDevice]] | None:
    def step(index: int, picked: dict[str, list[PublishedDevice]], used: set[str]
             ) -> dict[str, list[PublishedDevice]] | None:
        if index == len(options):
            return dict(picked) if _satisfies(picked, constraints) else None
        for sub in options[index]:
            for choice in _choices(sub, used):
                picked[sub.name] = choice
                if _satisfies(picked, constraints):
                    found = step(index + 1, picked, used | {d.name for d in choice})
                    if found is not None:
                        return found
                del picked[sub.name]
        return None

    return step(0, {}, set())


def match_claim(document: Mapping[str, Any], devices: Sequence[PublishedDevice]) -> MatchResult:
    """Evaluate a ResourceClaim or ResourceClaimTemplate against `devices`; ClaimError for a bad claim."""
    claim, spec, path = claim_spec(document)
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
            options.append([_request(f"{where}.exactly", name, request["exactly"], devices)])
        elif request.get("firstAvailable"):
            options.append([
                _request(f"{where}.firstAvailable[{i}]", name, sub, devices)
                for i, sub in enumerate(request["firstAvailable"])
            ])
        else:
            raise ClaimError(where, "needs exactly (one DeviceClass) or firstAvailable (alternatives)")
    results = [sub for alternatives in options for sub in alternatives]
    constraints = (spec.get("devices") or {}).get("constraints") or []
    found = _search(options, constraints)
    if found is None:
        short = [f"{r.name} wants {'all' if r.wanted is None else r.wanted} of {len(r.matching)} matching"
                 for r in results]
        reason = "no combination of devices satisfies every request" + (
            " and constraint" if constraints else "") + f" ({'; '.join(short)})"
        return MatchResult(claim, results, None, reason)
    return MatchResult(claim, results, {name: [d.name for d in picked] for name, picked in found.items()})
