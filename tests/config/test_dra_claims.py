"""Claim templates take what a DRA claim for NVIDIA's driver can say: `firstAvailable` alternatives and the
driver's opaque `config` (issue 21, item 12).

The opaque parameters follow dra-driver-nvidia-gpu's API (api/nvidia.com/resource/v1beta1): gpuconfig.go
`GpuConfig{sharing}`, migconfig.go `MigDeviceConfig{sharing}`, sharing.go `GpuSharing{strategy: TimeSlicing|MPS,
timeSlicingConfig{interval}, mpsConfig{defaultActiveThreadPercentage, defaultPinnedDeviceMemoryLimit,
defaultPerDevicePinnedMemoryLimit}}` with GetTimeSlicingConfig / GetMpsConfig refusing the other strategy's
settings, and validate.go (intervals Default/Short/Medium/Long, a thread percentage within 0-100, a strategy
refused while its feature gate, pkg/featuregates TimeSlicingSettings / MPSSupport, is off).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.render.dra import claim_templates
from tests.config.test_errors import H100, problems_of, with_pools
from tests.support.schemas import builtin_errors

H100_DRA = {**H100, "name": "h100dra", "gpuAllocation": "dra"}
GATES = {"featureGates": {"TimeSlicingSettings": True, "MPSSupport": True}}
BASE = "dra.claimTemplates[0].spec.devices"


def opaque(sharing: dict[str, Any] | None, kind: str = "GpuConfig", requests: list[str] | None = None
           ) -> dict[str, Any]:
    parameters: dict[str, Any] = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": kind}
    if sharing is not None:
        parameters["sharing"] = sharing
    entry: dict[str, Any] = {"opaque": {"driver": "gpu.nvidia.com", "parameters": parameters}}
    if requests is not None:
        entry["requests"] = requests
    return entry


FIRST_AVAILABLE = {"name": "gpu", "firstAvailable": [
    {"name": "small", "deviceClassName": "mig.nvidia.com",
     "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]},
    {"name": "full", "deviceClassName": "gpu.nvidia.com"},
]}
EXACT = {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}


def document(*config: dict[str, Any], request: dict[str, Any] = EXACT, values: dict[str, Any] | None = None
             ) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": [copy.deepcopy(request)]}
    if config:
        devices["config"] = list(config)
    dra: dict[str, Any] = {"namespaces": {"ml": "existing"}, "values": GATES if values is None else values,
                           "claimTemplates": [{"name": "shared", "namespace": "ml", "spec": {"devices": devices}}]}
    return with_pools(H100_DRA, dra=dra)


def problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        parse_config(doc)
    return [(p.path, p.message) for p in caught.value.problems]


@pytest.mark.parametrize("sharing", [
    {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}},
    {"strategy": "TimeSlicing"},
    {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50,
                                      "defaultPinnedDeviceMemoryLimit": "10Gi",
                                      "defaultPerDevicePinnedMemoryLimit": {"0": "5Gi"}}},
])
def test_the_drivers_sharing_config_is_accepted_and_rendered(sharing: dict[str, Any]) -> None:
    config = parse_config(document(opaque(sharing, requests=["gpu"])))
    [template] = claim_templates(config)
    [entry] = template["spec"]["spec"]["devices"]["config"]
    assert entry["opaque"]["parameters"]["sharing"]["strategy"] == sharing["strategy"]
    assert entry["requests"] == ["gpu"]
    for version in ("1.34", "1.36"):
        assert builtin_errors(template, version) == []


def test_first_available_alternatives_are_accepted_checked_and_rendered() -> None:
    config = parse_config(document(opaque(None, kind="MigDeviceConfig"), request=FIRST_AVAILABLE))
    [template] = claim_templates(config)
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert [(sub["name"], sub["count"]) for sub in request["firstAvailable"]] == [("small", 1), ("full", 1)]
    for version in ("1.34", "1.36"):
        assert builtin_errors(template, version) == []
    # each alternative's selectors are checked against its own DeviceClass's devices
    bad = copy.deepcopy(FIRST_AVAILABLE)
    bad["firstAvailable"][1]["selectors"] = bad["firstAvailable"][0]["selectors"]  # `profile` on full GPUs
    [(path, message)] = problems(document(request=bad))
    assert path == f"{BASE}.requests[0].firstAvailable[1].selectors[0].cel.expression"
    assert "on gpu devices" in message


@pytest.mark.parametrize("doc, path, wanted", [
    (document(opaque({"strategy": "TimeSlicing", "mpsConfig": {}})),
     f"{BASE}.config[0].opaque.parameters.sharing", "mpsConfig goes with strategy MPS"),
    (document(opaque({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 120}})),
     f"{BASE}.config[0].opaque.parameters.sharing.mpsConfig.defaultActiveThreadPercentage", "100"),
    (document(opaque({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "VeryLong"}})),
     f"{BASE}.config[0].opaque.parameters.sharing.timeSlicingConfig.interval", "Long"),
    (document(opaque({"strategy": "Shared"})), f"{BASE}.config[0].opaque.parameters.sharing.strategy", "MPS"),
    (document(opaque({"strategy": "MPS"}), values={}),
     f"{BASE}.config[0].opaque.parameters.sharing.strategy", "dra.values.featureGates.MPSSupport: true"),
    (document(opaque({"strategy": "TimeSlicing"}, requests=["gpus"])), f"{BASE}.config[0].requests",
     "not a request of this claim"),
    (document(opaque(None, kind="MigDeviceConfig")), f"{BASE}.config[0].opaque.parameters.kind",
     "use GpuConfig"),
    (document(request={"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}, "firstAvailable": [
        {"name": "full", "deviceClassName": "gpu.nvidia.com"}]}), f"{BASE}.requests[0]", "not both"),
])
def test_bad_claim_config_names_the_field_and_the_fix(doc: dict[str, Any], path: str, wanted: str) -> None:
    found = problems(doc)
    assert [p for p, _ in found] == [path], found
    assert wanted in found[0][1], found


def _claim(*requests: dict[str, Any]) -> dict[str, Any]:
    template = {"name": "t", "namespace": "dra-driver-nvidia-gpu", "spec": {"devices": {"requests": list(requests)}}}
    return with_pools(H100_DRA, dra={"claimTemplates": [template]})


def _gpus(name: str, count: int) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}


@pytest.mark.parametrize("requests", [[_gpus("a", 32)], [_gpus("a", 16), _gpus("b", 16)],
                                      [_gpus(f"r{i}", 1) for i in range(32)]])
def test_a_claim_of_up_to_32_devices_is_accepted(requests: list[dict[str, Any]]) -> None:
    """resource.k8s.io/v1 types.go: AllocationResultsMaxSize = DeviceRequestsMaxSize = 32."""
    parse_config(_claim(*requests))


@pytest.mark.parametrize(("requests", "path", "why"), [
    ([_gpus("a", 33)], "requests[0].exactly.count", "less than or equal to 32"),
    ([_gpus("a", 16), _gpus("b", 17)], "", "the requests ask for 33 devices and the scheduler allocates at most 32"),
    ([_gpus(f"r{i}", 1) for i in range(33)], "requests", "must list at most 32 items"),
])
def test_a_claim_past_32_devices_is_refused(requests: list[dict[str, Any]], path: str, why: str) -> None:
    found = {p.path: p.message for p in problems_of(_claim(*requests))}
    where = "dra.claimTemplates[0].spec.devices" + (f".{path}" if path else "")
    assert why in found[where], found
