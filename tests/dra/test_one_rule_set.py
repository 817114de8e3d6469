"""`gpu-operator render` and `gpu-operator dra match` read a claim by one set of rules: the same cases, fed to both,
are accepted by both or refused by both, with the problem at the same field.

The rules are the API server's for a ResourceClaimSpec (kubernetes pkg/apis/resource/validation validation.go:
`validateDeviceClaim` with unique request names, `validateDeviceRequest` with at most 8 `firstAvailable`
alternatives of unique names (`FirstAvailableDeviceRequestMaxSize`), `validateDeviceAllocationMode` (no `count`
with `All`), `validateDeviceConstraint` and `validateDeviceClaimConfiguration` (each name a request or
`<request>/<alternative>` by `validateRequestNameRef`, once), `validateFullyQualifiedName` for `matchAttribute`),
the scheduler's 32-device claim limit (`AllocationResultsMaxSize`), unknown fields refused as a strict decode
does, and NVIDIA's driver's classes, attributes and opaque config kinds. Each bound is tested at the edge and one
past it; the render's context (DRA on, both resource kinds, the sharing feature gates) accepts everything the
claim itself may say, so only the claim's own rules decide.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_operator.agents.nvml import open_nvml
from gpu_operator.config import ConfigError, parse_config
from gpu_operator.dra.match import ClaimError, match_claim
from gpu_operator.dra.slices import PublishedDevice, node_devices
from tests.config.test_errors import H100, with_pools

H100_DRA = {**H100, "name": "h100dra", "gpuAllocation": "dra"}
GATES = {"featureGates": {"TimeSlicingSettings": True, "MPSSupport": True}}
RENDER_BASE = "dra.claimTemplates[0].spec"
MATCH_BASE = "spec.spec"
ROOT = "resource.kubernetes.io/pcieRoot"


def gpus(name: str = "gpu", count: int | None = None, **extra: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.nvidia.com", **extra}
    if count is not None:
        exactly["count"] = count
    return {"name": name, "exactly": exactly}


def alternatives(count: int, name: str = "gpu") -> dict[str, Any]:
    return {"name": name, "firstAvailable": [{"name": f"alt{i}", "deviceClassName": "gpu.nvidia.com"}
                                             for i in range(count)]}


def spec(*requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None,
         config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints is not None:
        devices["constraints"] = constraints
    if config is not None:
        devices["config"] = config
    return {"devices": devices}


def opaque(kind: str = "GpuConfig", requests: list[str] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"opaque": {"driver": "gpu.nvidia.com", "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": kind}}}
    if requests is not None:
        entry["requests"] = requests
    return entry


#: (case, claim spec, the field its problem is told at below the spec; None: accepted)
CASES: list[tuple[str, dict[str, Any], str | None]] = [
    # request names: each once
    ("two requests", spec(gpus("a"), gpus("b")), None),
    ("a request name twice", spec(gpus("a"), gpus("a")), "devices.requests[1].name"),
    # count goes with ExactCount only
    ("All without count", spec(gpus(allocationMode="All")), None),
    ("All with a count", spec(gpus(count=1, allocationMode="All")), "devices.requests[0].exactly.count"),
    ("count 1", spec(gpus(count=1)), None),
    ("count 0", spec(gpus(count=0)), "devices.requests[0].exactly.count"),
    # constraints name requests of the claim (or an alternative as <request>/<alternative>), each once
    ("a constraint on its request", spec(gpus(), constraints=[{"requests": ["gpu"], "matchAttribute": ROOT}]), None),
    ("a constraint on an unknown request",
     spec(gpus(), constraints=[{"requests": ["gpus"], "matchAttribute": ROOT}]), "devices.constraints[0].requests"),
    ("a constraint on an alternative",
     spec(alternatives(2), constraints=[{"requests": ["gpu/alt1"], "matchAttribute": ROOT}]), None),
    ("a constraint on an unknown alternative",
     spec(alternatives(2), constraints=[{"requests": ["gpu/alt2"], "matchAttribute": ROOT}]),
     "devices.constraints[0].requests"),
    ("a constraint naming a request twice",
     spec(gpus(), constraints=[{"requests": ["gpu", "gpu"], "matchAttribute": ROOT}]),
     "devices.constraints[0].requests"),
    # matchAttribute is fully qualified, and published by the driver on the requests' devices
    ("a qualified attribute", spec(gpus(), constraints=[{"matchAttribute": ROOT}]), None),
    ("an unqualified attribute", spec(gpus(), constraints=[{"matchAttribute": "pcieRoot"}]),
     "devices.constraints[0].matchAttribute"),
    ("an attribute the driver does not publish", spec(gpus(), constraints=[{"matchAttribute": "gpu.nvidia.com/x"}]),
     "devices.constraints[0].matchAttribute"),
    # unknown keys, at every level
    ("adminAccess", spec(gpus(adminAccess=False)), None),
    ("an unknown key of exactly", spec(gpus(tolerations=[])), "devices.requests[0].exactly.tolerations"),
    ("an unknown key of devices", {"devices": {"requests": [gpus()], "extra": 1}}, "devices.extra"),
    ("an unknown key of the spec", {"devices": {"requests": [gpus()]}, "device": {}}, "device"),
    # firstAvailable: at most 8 alternatives, each name once
    ("8 alternatives", spec(alternatives(8)), None),
    ("9 alternatives", spec(alternatives(9)), "devices.requests[0].firstAvailable"),
    ("an alternative name twice",
     spec({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "gpu.nvidia.com"},
                                             {"name": "a", "deviceClassName": "mig.nvidia.com"}]}),
     "devices.requests[0].firstAvailable[1].name"),
    # at most 32 devices to one claim
    ("32 devices in one request", spec(gpus(count=32)), None),
    ("33 devices in one request", spec(gpus(count=33)), "devices.requests[0].exactly.count"),
    ("16 and 16 devices", spec(gpus("a", 16), gpus("b", 16)), None),
    ("16 and 17 devices", spec(gpus("a", 16), gpus("b", 17)), "devices"),
    ("32 requests", spec(*[gpus(f"r{i}") for i in range(32)]), None),
    ("33 requests", spec(*[gpus(f"r{i}") for i in range(33)]), "devices.requests"),
    # classes, selectors and the driver's opaque config
    ("an unknown class", spec({"name": "gpu", "exactly": {"deviceClassName": "gpu"}}),
     "devices.requests[0].exactly.deviceClassName"),
    ("a selector on an attribute gone since v25.8",
     spec(gpus(selectors=[{"cel": {"expression": "device.attributes['gpu.nvidia.com'].index == 0"}}])),
     "devices.requests[0].exactly.selectors[0].cel.expression"),
    ("config for its request", spec(gpus(), config=[opaque(requests=["gpu"])]), None),
    ("config for an unknown request", spec(gpus(), config=[opaque(requests=["gpus"])]), "devices.config[0].requests"),
    ("MIG config for full GPUs", spec(gpus(), config=[opaque("MigDeviceConfig")]),
     "devices.config[0].opaque.parameters.kind"),
]


@pytest.fixture(scope="module")
def node() -> list[PublishedDevice]:
    # one GPU: enough to evaluate, and the search over a 32-device request ends at once
    return node_devices(open_nvml("fake:t4-1x"), simulated=True)


def render_problems(claim: dict[str, Any]) -> list[str]:
    """The fields `gpu-operator render` refuses in a claim template with this spec (paths below the spec)."""
    template = {"name": "t", "namespace": "ml", "spec": copy.deepcopy(claim)}
    document = with_pools(H100_DRA, dra={"namespaces": {"ml": "existing"}, "values": GATES,
                                         "claimTemplates": [template]})
    try:
        parse_config(document)
    except ConfigError as error:
        return sorted(p.path.removeprefix(f"{RENDER_BASE}.") if p.path != RENDER_BASE else ""
                      for p in error.problems)
    return []


def match_problems(claim: dict[str, Any], devices: list[PublishedDevice]) -> list[str]:
    """The fields `gpu-operator dra match` refuses in a ResourceClaimTemplate with this spec."""
    document = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
                "spec": {"spec": copy.deepcopy(claim)}}
    try:
        match_claim(document, devices)
    except ClaimError as error:
        return sorted(p.path.removeprefix(f"{MATCH_BASE}.") if p.path != MATCH_BASE else "" for p in error.problems)
    return []


@pytest.mark.parametrize(("claim", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_render_and_dra_match_accept_and_refuse_the_same_claims(claim: dict[str, Any], field: str | None,
                                                                 node: list[PublishedDevice]) -> None:
    by_render = render_problems(claim)
    assert by_render == match_problems(claim, node)
    assert by_render == ([] if field is None else [field])


def test_the_problems_read_the_same_from_both() -> None:
    """One wording: the message render gives is the one dra match gives."""
    claim = spec(gpus("a"), gpus("a"), constraints=[{"requests": ["b"], "matchAttribute": "pcieRoot"}])
    document = with_pools(H100_DRA, dra={"namespaces": {"ml": "existing"}, "claimTemplates": [
        {"name": "t", "namespace": "ml", "spec": claim}]})
    with pytest.raises(ConfigError) as rendered:
        parse_config(document)
    with pytest.raises(ClaimError) as matched:
        match_claim({"kind": "ResourceClaim", "metadata": {"name": "c"}, "spec": claim}, [])
    assert [p.message for p in rendered.value.problems] == [p.message for p in matched.value.problems]
    assert len(matched.value.problems) == 3  # every problem at once: the repeated name, the request, the attribute
