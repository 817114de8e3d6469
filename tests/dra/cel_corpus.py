"""The corpus of DRA CEL selectors that `dra match` and the real scheduler must judge alike.

Each case is a selector over the attributes NVIDIA's DRA driver publishes for a GPU (dra-driver-nvidia-gpu
v0.4.1's GPU kubelet plugin: strings, the standard PCI attributes, versions as semver, memory as a quantity), the
devices its request wants, and the verdict: `rejected` (the API server's CEL checker refuses the claim),
`allocated`, `unschedulable` (no allocation exists), or `error` (the scheduler's allocator stops at a CEL runtime
error). The devices are a simulated 8x H100 80GB HBM3 node (`fake:h100-8x`): driver 570.124.6, CUDA 12.8.0,
compute capability 9.0.0, 81559Mi each, gpu-0 to gpu-3 under `pci0000:00`, gpu-4 to gpu-7 under `pci0000:80`.

tests/dra/test_cel_corpus.py checks `dra match` against the verdicts offline; tests/e2e/test_dra_cel_differential.py
checks that kube-scheduler 1.36 reaches the same ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from gpu_operator.agents.nvml import open_nvml
from gpu_operator.dra.match import ClaimError, match_claim
from gpu_operator.dra.slices import PublishedDevice, node_devices

__all__ = ["CORPUS", "Case", "Verdict", "claim", "offline_verdict", "simulated_node_devices"]

Verdict = Literal["rejected", "allocated", "unschedulable", "error"]
A = "device.attributes['gpu.nvidia.com']"
R = "device.attributes['resource.kubernetes.io']"
C = "device.capacity['gpu.nvidia.com']"
GPU0 = "GPU-879bf707-73f0-4d71-a7ec-cf5c106427d9"  # the uuid of gpu-0 of the simulated h100-8x node


@dataclass(frozen=True)
class Case:
    """A selector, how many devices the request wants (`All` or a count), and the verdict both must reach."""

    expression: str
    wanted: Verdict
    count: int | Literal["All"] = 1


CORPUS: tuple[Case, ...] = (
    # strings, booleans and the standard PCI attributes
    Case(f"{A}.productName == 'NVIDIA H100 80GB HBM3'", "allocated"),
    Case(f"{A}.productName.lowerAscii().contains('h100')", "allocated"),
    Case(f"{A}.productName.lowerAscii().contains('a100')", "unschedulable"),
    Case(f"{A}.productName.upperAscii().endsWith('HBM3')", "allocated"),
    Case(f"device.driver == 'gpu.nvidia.com' && {A}.productName.matches('^NVIDIA H[0-9]+ ')", "allocated"),
    Case(f"{A}.architecture == 'Hopper' && {A}.brand == 'Nvidia'", "allocated"),
    Case(f"{A}.type == 'mig'", "unschedulable"),
    Case(f"{R}.pcieRoot == 'pci0000:80'", "allocated"),
    Case(f"{R}.pciBusID.startsWith('0000:db')", "allocated"),
    Case(f"{A}.architecture == 'Hopper'", "allocated", 8),
    Case(f"{A}.architecture == 'Hopper'", "unschedulable", 9),
    # versions: the semver library's functions, equality with versions only, no ordering operators
    Case(f"{A}.driverVersion.isGreaterThan(semver('570.0.0'))", "allocated"),
    Case(f"{A}.driverVersion.isLessThan(semver('565.0.0'))", "unschedulable"),
    Case(f"{A}.driverVersion.compareTo(semver('570.124.6')) == 0", "allocated"),
    Case(f"{A}.driverVersion == semver('570.124.6')", "allocated"),
    Case(f"{A}.driverVersion != semver('570.124.6')", "unschedulable"),
    Case(f"{A}.driverVersion.major() >= 570 && {A}.cudaDriverVersion.minor() == 8", "allocated"),
    Case(f"{A}.cudaDriverVersion.isGreaterThan(semver('12.8.0-rc.1'))", "allocated"),
    Case(f"{A}.cudaComputeCapability.compareTo(semver('9.0.0')) >= 0", "allocated"),
    Case(f"{A}.driverVersion == '570.124.6'", "error"),
    Case(f"'570.124.6' == {A}.driverVersion", "unschedulable"),
    Case(f"{A}.driverVersion > {A}.cudaDriverVersion", "error"),
    Case(f"{A}.driverVersion < semver('600.0.0')", "rejected"),
    Case("semver('570.124.6') == '570.124.6'", "rejected"),
    Case(f"{A}.driverVersion.isGreaterThan(semver('570'))", "error"),
    # quantities: memory is 81559Mi on an H100 80GB HBM3
    Case(f"{C}.memory.compareTo(quantity('80Gi')) >= 0", "unschedulable"),
    Case(f"{C}.memory.isGreaterThan(quantity('79Gi'))", "allocated"),
    Case(f"{C}.memory == quantity('81559Mi')", "allocated"),
    Case(f"{C}.memory.asInteger() > 80000000000", "allocated"),
    Case(f"{C}.memory >= quantity('80Gi')", "rejected"),
    Case(f"{C}.memory == '81559Mi'", "rejected"),
    Case(f"{C}.memory.add(quantity('1Gi')).isGreaterThan(quantity('80Gi'))", "allocated"),
    Case(f"{C}.memory.sub(quantity('1Mi')) == quantity('81558Mi')", "allocated"),
    Case(f"quantity('81558Mi') == {C}.memory.sub(quantity('1Mi'))", "error"),
    Case("quantity('1.5').asInteger() == 1", "error"),
    # attributes a device lacks, and the allocator's order
    Case(f"{A}.addressingMode == 'HMM'", "error"),
    Case(f"has({A}.addressingMode)", "unschedulable"),
    Case(f"{A}.uuid == '{GPU0}' || {A}.addressingMode == 'HMM'", "allocated"),
    Case(f"{A}.uuid == '{GPU0}' || {A}.addressingMode == 'HMM'", "error", "All"),
    Case(f"{A}.uuid != '{GPU0}' && {A}.addressingMode == 'HMM'", "error"),
    Case(f"{A}.type == 'gpu' && {A}.cudaComputeCapability.major() == 9", "allocated"),
)


NAMESPACE = "dra-cel"


def simulated_node_devices(profile: str = "h100-8x") -> list[PublishedDevice]:
    """The devices the NVIDIA DRA driver publishes for a simulated node (its ResourceSlice's devices)."""
    nvml = open_nvml(f"fake:{profile}")
    try:
        return node_devices(nvml, simulated=True)
    finally:
        nvml.close()


def claim(index: int, case: Case) -> dict[str, Any]:
    """The ResourceClaim `cel-<index>` with the case's selector in its one request."""
    exactly: dict[str, Any] = {"deviceClassName": "gpu.nvidia.com",
                               "selectors": [{"cel": {"expression": case.expression}}]}
    if case.count == "All":
        exactly["allocationMode"] = "All"
    else:
        exactly.update(allocationMode="ExactCount", count=case.count)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"cel-{index}", "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def offline_verdict(document: dict[str, Any], devices: list[PublishedDevice]) -> tuple[Verdict, str]:
    """`dra match`'s verdict on the claim: refused (a type error the API server's checker reports), allocated,
    not allocatable, or stopped by a CEL runtime error (with the scheduler's words)."""
    try:
        result = match_claim(document, devices)
    except ClaimError as error:
        return "rejected", str(error)
    if result.error:
        return "error", result.error
    return ("allocated", "") if result.allocation is not None else ("unschedulable", result.reason)
