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

A claim is first read as the stack's claim templates are (:func:`gpu_operator.config.dra_claims.read_claim_spec`:
the API server's rules and NVIDIA's driver's), so a claim `gpu-operator render` accepts is evaluated here, and one
it refuses is refused here with the same problems.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Mapping, Sequence

from gpu_operator.config.dra_claims import ClaimConstraint, ClaimSpec, DeviceRequest, DeviceSubRequest, read_claim_spec
from gpu_operator.config.errors import Problem
from gpu_operator.dra.slices import PublishedDevice
from gpu_operator.facts.dra_cel import CelError, evaluate
from gpu_operator.facts.dra_driver import DeviceClassFacts, device_class

__all__ = ["ClaimError", "Candidate", "RequestResult", "MatchResult", "match_claim", "claim_spec"]


class ClaimError(ValueError):
    """The claim document cannot be evaluated: every problem, each with its path and the fix."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__("; ".join(map(str, problems)))
        self.problems = tuple(problems)
        self.path = self.problems[0].path


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
    alternative: str | None = None
    """The name of this `firstAvailable` alternative (None for `exactly`)."""

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


def claim_spec(document: Mapping[str, Any]) -> tuple[str, Any, str]:
    """(name, claim spec as written, path of the spec) of a ResourceClaim or ResourceClaimTemplate document."""
    kind = document.get("kind")
    name = str((document.get("metadata") or {}).get("name", "<unnamed>"))
    if kind == "ResourceClaim":
        return name, document.get("spec"), "spec"
    if kind == "ResourceClaimTemplate":
        template = document.get("spec")
        return name, template.get("spec") if isinstance(template, Mapping) else None, "spec.spec"
    raise ClaimError([Problem("kind", f"is {kind!r}: give a ResourceClaim or a ResourceClaimTemplate "
                                      "(resource.k8s.io/v1)")])


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


def _request(name: str, exact: DeviceRequest, devices: Sequence[PublishedDevice], claim: str) -> RequestResult:
    cls = device_class(exact.device_class_name)
    assert cls is not None  # read_claim_spec refuses a class the driver does not create
    expressions = [selector.cel.expression for selector in exact.selectors]
    wanted = (exact.count or 1) if exact.allocation_mode == "ExactCount" else None
    alternative = exact.name if isinstance(exact, DeviceSubRequest) else None
    result = RequestResult(name, cls.name, wanted, alternative=alternative)
    result.candidates = [_verdict(device, cls, expressions, claim) for device in devices]
    return result


def _constraint_value(device: PublishedDevice, attribute: str) -> Any:
    domain, _, short = attribute.rpartition("/")
    return device.attributes.get(short if domain == device.driver else attribute)


def _applies(constraint: ClaimConstraint, request: RequestResult) -> bool:
    """matchAttributeConstraint.matches: no requests named means all; else the request, or `<request>/<alt>`."""
    named = constraint.requests
    return not named or request.name in named or f"{request.name}/{request.alternative}" in named


def _satisfies(picked: Mapping[int, tuple[RequestResult, list[PublishedDevice]]],
               constraints: Sequence[ClaimConstraint]) -> bool:
    for constraint in constraints:
        values = [_constraint_value(device, constraint.match_attribute) for request, chosen in picked.values()
                  if _applies(constraint, request) for device in chosen]
        if any(value is None for value in values) or len(set(map(repr, values))) > 1:
            return False
    return True


class _Aborted(Exception):
    """The search stopped at an error, as the scheduler's allocator returns one."""


class _Search:
    """The allocator's depth-first search over `options` (per request, its alternatives: one for `exactly`, the
    subrequests of `firstAvailable` in order)."""

    def __init__(self, claim: str, options: Sequence[Sequence[RequestResult]],
                 constraints: Sequence[ClaimConstraint]) -> None:
        self.claim, self.options, self.constraints = claim, options, constraints
        self.picked: dict[int, tuple[RequestResult, list[PublishedDevice]]] = {}  # by id of the (sub)request
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
        if not self._request(0):
            return None
        return {request.name: list(chosen) for request, chosen in self.picked.values()}

    def _request(self, index: int) -> bool:
        if index == len(self.options):
            return True
        return any(self._fill(index, sub, 0) for sub in self.options[index])

    def _take(self, sub: RequestResult, device: PublishedDevice) -> bool:
        self.picked.setdefault(id(sub), (sub, []))[1].append(device)
        if _satisfies(self.picked, self.constraints):
            self.used.add(device.name)
            return True
        self._drop(sub, device)
        return False

    def _drop(self, sub: RequestResult, device: PublishedDevice) -> None:
        chosen = self.picked[id(sub)][1]
        chosen.remove(device)
        if not chosen:
            del self.picked[id(sub)]
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
    claim, written, path = claim_spec(document)
    spec, problems = read_claim_spec(written, path.split("."))
    if spec is None or problems:
        raise ClaimError(problems)
    return _evaluate(claim, document, spec, devices)


def _evaluate(claim: str, document: Mapping[str, Any], spec: ClaimSpec,
              devices: Sequence[PublishedDevice]) -> MatchResult:
    namespace = (document.get("metadata") or {}).get("namespace")
    owner = f"{namespace}/{claim}" if namespace else claim
    options = [[_request(request.name, exact, devices, owner) for _, exact in request.alternatives]
               for request in spec.devices.requests]
    results = [sub for alternatives in options for sub in alternatives]
    constraints = spec.devices.constraints
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
