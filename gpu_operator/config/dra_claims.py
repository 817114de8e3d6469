"""A ResourceClaimSpec for NVIDIA's DRA driver, and the one set of rules both `render` and `dra match` apply to it.

A claim (`resource.k8s.io/v1`) asks for devices: each request names a DeviceClass and CEL selectors (`exactly`,
`count` devices or `All` of them) or lists alternatives (`firstAvailable`, at most 8, the first that can be
allocated is taken); `constraints` make the devices of some requests share an attribute (`matchAttribute`, fully
qualified: `resource.kubernetes.io/pcieRoot`), and `config` hands the driver opaque parameters (a GpuConfig or a
MigDeviceConfig with its sharing settings) for the devices of some requests.

The rules are the API server's (pkg/apis/resource/validation validation.go `validateDeviceClaim`,
`validateDeviceRequest`, `validateDeviceAllocationMode`, `validateDeviceConstraint`, `validateRequestNameRef`,
`validateFullyQualifiedName`; the limits of types.go), the scheduler's (at most 32 devices allocated to one claim)
and NVIDIA's driver's (its DeviceClasses, the attributes it publishes, its opaque config kinds). The model below
holds the shapes and bounds, :func:`claim_problems` the rules across fields; :func:`read_claim_spec` applies both
to a claim as written. The stack's claim templates (`dra.claimTemplates[].spec`, with the config around them:
which classes the chart creates, its feature gates) and `gpu-operator dra match` (any claim file) go through
these, so a claim one accepts the other accepts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.errors import Problem, problems_from_validation_error
from gpu_operator.config.kube import DnsLabel, Quantity
from gpu_operator.facts.dra_driver import DEVICE_CLASSES, DeviceClassFacts, device_class

__all__ = [
    "CelSelector",
    "ClaimConfig",
    "ClaimConstraint",
    "ClaimDevices",
    "ClaimRequest",
    "ClaimSpec",
    "DeviceRequest",
    "DeviceSubRequest",
    "GpuConfigParameters",
    "GpuSharing",
    "MAX_CLAIM_DEVICES",
    "MAX_FIRST_AVAILABLE",
    "claim_problems",
    "read_claim_spec",
]

#: resource.k8s.io/v1 limits (types.go): devices one claim is allocated (`AllocationResultsMaxSize`), and the
#: requests, constraints and config entries a claim lists (`DeviceRequestsMaxSize`, `DeviceConstraintsMaxSize`,
#: `DeviceConfigMaxSize`).
MAX_CLAIM_DEVICES = 32
#: `FirstAvailableDeviceRequestMaxSize`: the alternatives of one request.
MAX_FIRST_AVAILABLE = 8


class CelExpression(ConfigModel):
    expression: str = Field(min_length=1)


class CelSelector(ConfigModel):
    """One selector of a request: a CEL expression over `device`."""

    cel: CelExpression


class DeviceRequest(ConfigModel):
    """`exactly`: devices of one DeviceClass that pass every selector (`count` of them, or `All`)."""

    device_class_name: str = Field(min_length=1)
    selectors: tuple[CelSelector, ...] = ()
    allocation_mode: Literal["ExactCount", "All"] = "ExactCount"
    count: int | None = Field(default=None, ge=1, le=MAX_CLAIM_DEVICES)
    admin_access: bool | None = None


class DeviceSubRequest(DeviceRequest):
    """One alternative of `firstAvailable`: a named `exactly`, tried in order until one can be allocated."""

    name: DnsLabel


class ClaimRequest(ConfigModel):
    """One request of a claim: `name`, then `exactly` (one DeviceClass) or `firstAvailable` (alternatives, the
    first that can be allocated is taken)."""

    name: DnsLabel
    exactly: DeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] | None = Field(default=None, min_length=1,
                                                                  max_length=MAX_FIRST_AVAILABLE)

    @model_validator(mode="after")
    def _one_form(self) -> ClaimRequest:
        if (self.exactly is None) == (self.first_available is None):
            raise ValueError("give exactly (one DeviceClass) or firstAvailable (alternatives, tried in order), "
                             "not both and not neither")
        return self

    @property
    def alternatives(self) -> tuple[tuple[str, DeviceRequest], ...]:
        """(path below the request, request) of `exactly`, or of each `firstAvailable` alternative."""
        if self.exactly is not None:
            return (("exactly", self.exactly),)
        return tuple((f"firstAvailable[{i}]", sub) for i, sub in enumerate(self.first_available or ()))


SharingStrategy = Literal["TimeSlicing", "MPS"]
TimeSliceInterval = Literal["Default", "Short", "Medium", "Long"]


class TimeSlicingConfig(ConfigModel):
    """`timeSlicingConfig` (resource.nvidia.com/v1beta1 sharing.go): the time slice the GPU gives each process."""

    interval: TimeSliceInterval | None = None


class MpsConfig(ConfigModel):
    """`mpsConfig`: the MPS control daemon's defaults for the claim's processes."""

    default_active_thread_percentage: int | None = Field(default=None, ge=0, le=100)
    default_pinned_device_memory_limit: Quantity | None = None
    default_per_device_pinned_memory_limit: dict[str, Quantity] | None = None


class GpuSharing(ConfigModel):
    """`sharing` of a GpuConfig / MigDeviceConfig: time-slicing or MPS, with the matching settings only."""

    strategy: SharingStrategy
    time_slicing_config: TimeSlicingConfig | None = None
    mps_config: MpsConfig | None = None

    @model_validator(mode="after")
    def _settings_match(self) -> GpuSharing:
        if self.strategy == "TimeSlicing" and self.mps_config is not None:
            raise ValueError("mpsConfig goes with strategy MPS; remove it, or set strategy: MPS")
        if self.strategy == "MPS" and self.time_slicing_config is not None:
            raise ValueError("timeSlicingConfig goes with strategy TimeSlicing; remove it, or set strategy: "
                             "TimeSlicing")
        return self


#: The driver's API group for opaque device config (api/nvidia.com/resource/v1beta1).
DRIVER_CONFIG_API = "resource.nvidia.com/v1beta1"


class GpuConfigParameters(ConfigModel):
    """`opaque.parameters` for the gpu.nvidia.com driver: a GpuConfig (full GPUs) or MigDeviceConfig (MIG
    devices) of resource.nvidia.com/v1beta1, whose `sharing` the kubelet plugin applies when it prepares them."""

    api_version: Literal["resource.nvidia.com/v1beta1"]
    kind: Literal["GpuConfig", "MigDeviceConfig"]
    sharing: GpuSharing | None = None

    @model_validator(mode="after")
    def _mig_sharing(self) -> GpuConfigParameters:
        if self.kind == "MigDeviceConfig" and self.sharing is not None and self.sharing.time_slicing_config:
            raise ValueError("a MigDeviceConfig's sharing takes no timeSlicingConfig (MIG devices time-slice "
                             "with the defaults); remove it")
        return self


class OpaqueConfig(ConfigModel):
    """`opaque`: parameters the named driver reads; only gpu.nvidia.com's are typed here."""

    driver: Literal["gpu.nvidia.com"]
    parameters: GpuConfigParameters


class ClaimConfig(ConfigModel):
    """`config[]` of a claim: opaque driver parameters for the devices of `requests` (all requests when empty)."""

    requests: tuple[str, ...] = ()
    opaque: OpaqueConfig


class ClaimConstraint(ConfigModel):
    """Devices of the named requests (all when empty) share the value of `matchAttribute`."""

    requests: tuple[str, ...] = ()
    match_attribute: str = Field(min_length=1)


class ClaimDevices(ConfigModel):
    requests: tuple[ClaimRequest, ...] = Field(min_length=1, max_length=MAX_CLAIM_DEVICES)
    constraints: tuple[ClaimConstraint, ...] = Field(default=(), max_length=MAX_CLAIM_DEVICES)
    config: tuple[ClaimConfig, ...] = Field(default=(), max_length=MAX_CLAIM_DEVICES)

    @model_validator(mode="after")
    def _devices_fit_one_claim(self) -> ClaimDevices:
        """The scheduler allocates at most 32 devices to a claim ("exceeds the claim limit"): the counts of the
        requests (the largest alternative of a firstAvailable) add up to at most that."""
        wanted = sum(max(exact.count or 1 for _, exact in request.alternatives) for request in self.requests
                     if all(exact.allocation_mode == "ExactCount" for _, exact in request.alternatives))
        if wanted > MAX_CLAIM_DEVICES:
            raise ValueError(f"the requests ask for {wanted} devices and the scheduler allocates at most "
                             f"{MAX_CLAIM_DEVICES} to one claim: split them over several claims")
        return self


class ClaimSpec(ConfigModel):
    """A ResourceClaimSpec (`resource.k8s.io/v1`), with the fields a GPU claim uses."""

    devices: ClaimDevices


#: The kinds of opaque config for the devices of each DeviceClass (api/nvidia.com/resource/v1beta1 api.go).
_CONFIG_KINDS = {"gpu": "GpuConfig", "mig": "MigDeviceConfig"}


def _known_class(name: str) -> tuple[DeviceClassFacts | None, str | None]:
    cls = device_class(name)
    if cls is None:
        known = ", ".join(c.name for c in DEVICE_CLASSES)
        return None, f"{name!r} is not a DeviceClass of NVIDIA's DRA driver: use one of {known}"
    return cls, None


def _ref_classes(requests: Sequence[ClaimRequest]) -> dict[str, list[DeviceClassFacts]]:
    """What a claim's `requests` lists may name (`validateRequestNameRef`): a request, whose devices come from any
    of its alternatives' classes, or `<request>/<alternative>` of a `firstAvailable`, from that one's class."""
    refs: dict[str, list[DeviceClassFacts]] = {}
    for request in requests:
        refs.setdefault(request.name, [])
        for below, exact in request.alternatives:
            cls = device_class(exact.device_class_name)
            classes = [cls] if cls is not None else []
            refs[request.name] += classes
            if isinstance(exact, DeviceSubRequest):
                refs.setdefault(f"{request.name}/{exact.name}", classes)
    return refs


def _refs_problems(where: str, names: Sequence[str], refs: dict[str, list[DeviceClassFacts]]) -> Iterator[Problem]:
    """`requests` of a constraint or config entry: each names a request (or `<request>/<alternative>`), once."""
    unknown = [name for name in names if name not in refs]
    if unknown:
        yield Problem(where, f"{', '.join(unknown)} is not a request of this claim (it has "
                             f"{', '.join(refs)}; an alternative of firstAvailable as <request>/<alternative>)")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        yield Problem(where, f"{', '.join(twice)} is listed twice: name each request once")


def _request_problems(base: str, requests: Sequence[ClaimRequest]) -> Iterator[Problem]:
    names = [request.name for request in requests]
    for r_index, request in enumerate(requests):
        where = f"{base}.devices.requests[{r_index}]"
        if names.index(request.name) < r_index:  # the API server marks the repeat (field.Duplicate)
            yield Problem(f"{where}.name", f"{request.name!r} is the name of requests[{names.index(request.name)}] "
                                           "too: give each request of a claim its own name")
        sub_names = [getattr(exact, "name", None) for _, exact in request.alternatives]
        for a_index, (below, exact) in enumerate(request.alternatives):
            sub_name = getattr(exact, "name", None)
            if sub_name is not None and sub_names.index(sub_name) < a_index:
                yield Problem(f"{where}.{below}.name", f"{sub_name!r} is the name of firstAvailable"
                                                       f"[{sub_names.index(sub_name)}] too: give each alternative "
                                                       "its own name")
            if exact.allocation_mode == "All" and exact.count is not None:
                yield Problem(f"{where}.{below}.count", "count goes with allocationMode ExactCount; remove it for All")
            cls, problem = _known_class(exact.device_class_name)
            if cls is None:
                yield Problem(f"{where}.{below}.deviceClassName", problem or "")
                continue
            for s_index, selector in enumerate(exact.selectors):
                # imported here: CEL's grammar costs 0.1 s at import, for every program, with or without DRA
                from gpu_operator.facts.dra_cel import check_expression

                for message in check_expression(selector.cel.expression, [cls.facts]):
                    yield Problem(f"{where}.{below}.selectors[{s_index}].cel.expression", message)


def _constraint_problems(base: str, devices: ClaimDevices) -> Iterator[Problem]:
    refs = _ref_classes(devices.requests)
    for c_index, constraint in enumerate(devices.constraints):
        where = f"{base}.devices.constraints[{c_index}]"
        yield from _refs_problems(f"{where}.requests", constraint.requests, refs)
        attribute = constraint.match_attribute
        if "/" not in attribute:
            yield Problem(f"{where}.matchAttribute",
                          f"{attribute!r} must be qualified with its domain, e.g. resource.kubernetes.io/pcieRoot or "
                          "gpu.nvidia.com/productName")
            continue
        # a request none of whose devices publish the attribute can never satisfy the constraint
        lacking = [classes for ref in (constraint.requests or [r.name for r in devices.requests])
                   if (classes := refs.get(ref)) and not any(cls.facts.has_attribute(attribute) for cls in classes)]
        if lacking:
            kinds = sorted({cls.devices for classes in lacking for cls in classes})
            yield Problem(f"{where}.matchAttribute", f"{attribute!r} is not an attribute the DRA driver publishes on "
                                                     f"{', '.join(kinds)} devices: use e.g. "
                                                     "resource.kubernetes.io/pcieRoot")


def _config_problems(base: str, devices: ClaimDevices) -> Iterator[Problem]:
    """Each opaque config names requests of the claim and fits their devices (GpuConfig for GPUs,
    MigDeviceConfig for MIG devices)."""
    refs = _ref_classes(devices.requests)
    for index, entry in enumerate(devices.config):
        where = f"{base}.devices.config[{index}]"
        yield from _refs_problems(f"{where}.requests", entry.requests, refs)
        targeted = [cls for ref in (entry.requests or [r.name for r in devices.requests]) for cls in refs.get(ref, [])]
        kinds = {cls.devices for cls in targeted}
        wanted = {_CONFIG_KINDS[kind] for kind in kinds if kind in _CONFIG_KINDS}
        parameters = entry.opaque.parameters
        if wanted and parameters.kind not in wanted:
            yield Problem(f"{where}.opaque.parameters.kind", f"{parameters.kind} does not configure the "
                                                             f"{'/'.join(sorted(kinds))} devices these requests get: "
                                                             f"use {' or '.join(sorted(wanted))}")


def claim_problems(spec: ClaimSpec, base: str) -> Iterator[Problem]:
    """The rules across a claim's fields, each at its path below `base` (the path of the spec itself)."""
    yield from _request_problems(base, spec.devices.requests)
    yield from _config_problems(base, spec.devices)
    yield from _constraint_problems(base, spec.devices)


def read_claim_spec(spec: Any, base: Sequence[str | int]) -> tuple[ClaimSpec | None, list[Problem]]:
    """A ResourceClaimSpec as written (a mapping) checked as the stack's claim templates are: the model, then
    :func:`claim_problems`; the spec (None when its shape is wrong) and every problem, at paths below `base`."""
    try:
        parsed = ClaimSpec.model_validate(spec)
    except ValidationError as error:
        return None, problems_from_validation_error(error, base, model=ClaimSpec)
    return parsed, list(claim_problems(parsed, ".".join(str(part) for part in base)))
