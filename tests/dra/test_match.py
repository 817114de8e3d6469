"""Claims evaluated against published devices: selectors, counts, All, firstAvailable and matchAttribute."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.agents.nvml import open_nvml
from gpu_operator.dra.match import ClaimError, match_claim
from gpu_operator.dra.slices import PublishedDevice, node_devices

PRODUCT = "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')"


@pytest.fixture(scope="module")
def h100() -> list[PublishedDevice]:
    return node_devices(open_nvml("fake:h100-8x"), simulated=True)


@pytest.fixture(scope="module")
def mig() -> list[PublishedDevice]:
    return node_devices(open_nvml("fake:a100-8x-mig"), simulated=True)


def claim(*requests: dict[str, Any], constraints: list[Any] | None = None, template: bool = True) -> dict[str, Any]:
    spec = {"devices": {"requests": list(requests), "constraints": constraints or []}}
    if template:
        return {"kind": "ResourceClaimTemplate", "metadata": {"name": "c"}, "spec": {"spec": spec}}
    return {"kind": "ResourceClaim", "metadata": {"name": "c"}, "spec": spec}


def exactly(name: str = "gpu", cls: str = "gpu.nvidia.com", *selectors: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "selectors": [{"cel": {"expression": e}}
                                                                             for e in selectors], **extra}}


ROOT = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]


def test_one_gpu_by_product(h100: list[PublishedDevice]) -> None:
    result = match_claim(claim(exactly("gpu", "gpu.nvidia.com", PRODUCT), template=False), h100)
    assert result.allocation == {"gpu": ["gpu-0"]}
    assert len(result.requests[0].matching) == 8


def test_four_gpus_under_one_pcie_root_fit_and_five_do_not(h100: list[PublishedDevice]) -> None:
    four = match_claim(claim(exactly(count=4), constraints=ROOT), h100)
    assert four.allocation == {"gpu": ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]}
    five = match_claim(claim(exactly(count=5), constraints=ROOT), h100)
    assert five.allocation is None and "constraint" in five.reason


def test_constraints_span_requests_and_devices_are_not_shared(h100: list[PublishedDevice]) -> None:
    result = match_claim(claim(exactly("a", count=3), exactly("b", count=1), constraints=ROOT), h100)
    assert result.allocation == {"a": ["gpu-0", "gpu-1", "gpu-2"], "b": ["gpu-3"]}
    assert match_claim(claim(exactly("a", count=3), exactly("b", count=2), constraints=ROOT), h100).allocation is None


def test_all_takes_every_matching_device(h100: list[PublishedDevice]) -> None:
    result = match_claim(claim(exactly(allocationMode="All")), h100)
    assert result.allocation == {"gpu": [f"gpu-{i}" for i in range(8)]}


def test_a_mig_request_finds_mig_devices_and_the_gpu_class_does_not(mig: list[PublishedDevice]) -> None:
    profile = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
    assert match_claim(claim(exactly("m", "mig.nvidia.com", profile)), mig).allocation is not None
    result = match_claim(claim(exactly("g", "gpu.nvidia.com")), mig)
    assert result.allocation is None
    assert all("DeviceClass gpu.nvidia.com is false" in c.reason for c in result.requests[0].candidates)


def test_first_available_falls_back(h100: list[PublishedDevice]) -> None:
    request = {"name": "gpu", "firstAvailable": [
        {"name": "mig", "deviceClassName": "mig.nvidia.com"},
        {"name": "full", "deviceClassName": "gpu.nvidia.com", "count": 2},
    ]}
    assert match_claim(claim(request), h100).allocation == {"gpu": ["gpu-0", "gpu-1"]}


def test_a_selector_failing_on_a_device_says_why(h100: list[PublishedDevice]) -> None:
    result = match_claim(claim(exactly("gpu", "gpu.nvidia.com",
                                       "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0")),
                         h100)
    assert result.allocation is None
    assert {c.reason for c in result.requests[0].candidates} == {"selector 0 is false"}


@pytest.mark.parametrize("document, path", [
    ({"kind": "Pod"}, "kind"),
    (claim(), "spec.spec.devices.requests"),
    (claim(exactly(cls="gpu")), "spec.spec.devices.requests[0].exactly.deviceClassName"),
    (claim(exactly("gpu", "gpu.nvidia.com", "device.attributes['gpu.nvidia.com'].index == 0")),
     "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression"),
    (claim(exactly(count=0)), "spec.spec.devices.requests[0].exactly.count"),
    (claim({"name": "gpu"}), "spec.spec.devices.requests[0]"),
])
def test_bad_claims_name_the_field(document: dict[str, Any], path: str, h100: list[PublishedDevice]) -> None:
    with pytest.raises(ClaimError) as caught:
        match_claim(document, h100)
    assert caught.value.path == path


@pytest.mark.parametrize(("named", "count", "allocated"), [
    (["gpu/full"], 4, True), (["gpu/full"], 5, False),  # the constraint holds the alternative taken
    (["gpu"], 5, False),  # naming the request holds every alternative
    (["gpu/mig"], 5, True),  # naming the alternative not taken holds nothing
])
def test_a_constraint_on_an_alternative_applies_when_that_alternative_is_taken(
        named: list[str], count: int, allocated: bool, h100: list[PublishedDevice]) -> None:
    """k8s.io/dynamic-resource-allocation structured allocator `matchAttributeConstraint.matches`: a constraint
    applies to a device of `<request>/<alternative>` when it names the request or that alternative."""
    request = {"name": "gpu", "firstAvailable": [
        {"name": "mig", "deviceClassName": "mig.nvidia.com"},
        {"name": "full", "deviceClassName": "gpu.nvidia.com", "count": count},
    ]}
    constraint = [{"requests": named, "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    result = match_claim(claim(request, constraints=constraint), h100)
    assert (result.allocation is not None) is allocated, result.reason
