"""The gpu-check end to end on the simulated NVML backend, so its machinery is tested on machines without a GPU.

nvidia-smi is played by :func:`simulated_smi`: the CSV nvidia-smi prints, written from the same simulated node
the agents read (so every comparison has a reference), and parsed by the check's own parser. The CUDA load is
left out (there is no libcuda to load); everything else - the agent processes, the fake kubelet, the device
plugin over gRPC, the validator, the report - runs for real.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpu_operator.agents.nvml import open_nvml
from tests.agents.gpu_machine import GpuEvidence
from tests.agents.validator.helpers import Node, node_tree
from tests.gpu.report import JSON_NAME, MARKDOWN_NAME, machine_facts, verdict, write_report
from tests.gpu.smi import SmiGpu, parse_smi
from tests.gpu.steps import (
    FAILED,
    PASSED,
    SKIPPED,
    CheckContext,
    StepResult,
    cdi_spec_vs_nvidia_ctk,
    device_plugin_allocates_a_gpu,
    exporter_under_load_vs_smi,
    feature_discovery_vs_smi,
    run_steps,
    validator_host_driver,
)

PROFILE = "h100-8x"
MIB = 1 << 20


def simulated_smi(profile: str = PROFILE) -> Callable[[], tuple[SmiGpu, ...]]:
    def query() -> tuple[SmiGpu, ...]:
        nvml = open_nvml(f"fake:{profile}")
        try:
            system, gpus, samples = nvml.system(), nvml.devices(), nvml.sample()
        finally:
            nvml.close()
        rows = []
        for gpu, sample in zip(gpus, samples, strict=True):
            memory = sample.memory
            rows.append(", ".join(str(v) for v in (
                gpu.index, gpu.uuid, gpu.name, gpu.pci.bus_id if gpu.pci else "[N/A]", system.driver_version,
                gpu.memory.total // MIB if gpu.memory else "[N/A]",
                memory.used // MIB if memory else "[N/A]", sample.gpu_temp_c,
                f"{sample.power_usage_mw / 1000:.2f}" if sample.power_usage_mw is not None else "[N/A]",
                sample.gpu_util_percent,
            )))
        return parse_smi("\n".join(rows) + "\n")

    return query


@pytest.fixture
def kernel(tmp_path: Path) -> Node:
    """A node's host root (with nvidia-smi where NVIDIA's validator looks for a host driver's), /proc and /sys."""
    (tmp_path / "node").mkdir()
    node = node_tree(tmp_path / "node")
    smi = Path(node.paths.host_root) / "usr/bin/nvidia-smi"
    smi.parent.mkdir(parents=True)
    smi.write_text("#!/bin/sh\nexit 0\n")
    smi.chmod(0o755)
    return node


@pytest.fixture
def dev_root(tmp_path: Path) -> Path:
    """A dev root with the node's device nodes (plain files stand in; the plugin checks that they exist)."""
    root = tmp_path / "devroot"
    (root / "dev").mkdir(parents=True)
    names = ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]
    nvml = open_nvml(f"fake:{PROFILE}")
    try:
        names += [f"nvidia{g.minor_number}" for g in nvml.devices()]
    finally:
        nvml.close()
    for name in names:
        (root / "dev" / name).touch()
    return root


@pytest.fixture
def ctx(tmp_path: Path, kernel: Node, dev_root: Path) -> Iterator[CheckContext]:
    # The simulated readings are a function of how many times each was read: the exporter's first collection
    # (no second one within a minute) and the simulated nvidia-smi's one reading are the same draw.
    yield CheckContext(work_dir=tmp_path / "work", nvml=f"fake:{PROFILE}", smi=simulated_smi(), load=None,
                       load_seconds=0, collect_interval_ms=60_000, host_root=kernel.paths.host_root,
                       proc=kernel.paths.proc, sys=kernel.paths.sys, dev_root=str(dev_root), cdi_tools=None)


def test_parse_smi_reads_numbers_and_not_available() -> None:
    text = ("0, GPU-a, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 595.91.07, 81559, 0, 31, 69.71, 0\n"
            "1, GPU-b, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 595.91.07, 81559, [N/A], 33, [Not Supported], 0\n")
    first, second = parse_smi(text)
    assert (first.index, first.uuid, first.memory_total_mib, first.power_w) == (0, "GPU-a", 81559.0, 69.71)
    assert (second.memory_used_mib, second.power_w, second.pci_bus_id) == (None, None, "00000000:2A:00.0")


def test_each_agent_step_passes_against_the_simulated_node(ctx: CheckContext) -> None:
    for step in (feature_discovery_vs_smi, exporter_under_load_vs_smi, device_plugin_allocates_a_gpu,
                 validator_host_driver):
        result = step(ctx)
        assert result.status == PASSED, (result.summary, result.details)
        assert result.details


def test_a_label_that_differs_from_nvidia_smi_fails_the_step_naming_it(ctx: CheckContext) -> None:
    honest = ctx.smi

    def renamed() -> tuple[SmiGpu, ...]:
        gpus = honest()
        return tuple(SmiGpu(g.index, g.uuid, "NVIDIA H200", *list(g.__getattribute__(f) for f in (
            "pci_bus_id", "driver_version", "memory_total_mib", "memory_used_mib", "temperature_c", "power_w",
            "utilization_pct"))) for g in gpus)

    ctx.smi = renamed
    results = {r.name: r for r in run_steps(ctx, skip=("pytest-gpu", "device-plugin-allocates-a-gpu",
                                                       "validator-host-driver"))}
    failed = results["feature-discovery-vs-nvidia-smi"]
    assert failed.status == FAILED
    assert any("nvidia.com/gpu.product: agent 'NVIDIA-H100-80GB-HBM3', nvidia-smi 'NVIDIA-H200'" in d
               for d in failed.details)
    assert results["exporter-under-load-vs-nvidia-smi"].status == FAILED


def test_the_whole_check_and_its_report(ctx: CheckContext, tmp_path: Path) -> None:
    results = run_steps(ctx, skip=("pytest-gpu",))
    assert [(r.name, r.status) for r in results] == [
        ("driver", PASSED), ("pytest-gpu", SKIPPED), ("feature-discovery-vs-nvidia-smi", PASSED),
        ("exporter-under-load-vs-nvidia-smi", PASSED), ("device-plugin-allocates-a-gpu", PASSED),
        ("validator-host-driver", PASSED), ("cdi-spec-vs-nvidia-ctk", SKIPPED),
    ], [(r.name, r.summary, r.details) for r in results if r.status == FAILED]
    assert verdict(results) == PASSED
    page = write_report(results, tmp_path / "report", machine_facts(ctx.nvml))
    text = page.read_text()
    assert page.name == MARKDOWN_NAME and text.startswith("# gpu-check: passed\n")
    assert "| cdi-spec-vs-nvidia-ctk | skipped |" in text and "nvidia-ctk and cdi-apply not found" in text
    assert '"verdict": "passed"' in (tmp_path / "report" / JSON_NAME).read_text()


def test_without_a_driver_every_step_after_the_first_is_skipped_and_the_check_fails(ctx: CheckContext) -> None:
    ctx.nvml = "auto"
    ctx.evidence = lambda: GpuEvidence((), ())
    results = run_steps(ctx)
    assert results[0] == StepResult("driver", FAILED, results[0].summary, (), results[0].seconds)
    assert results[0].summary.startswith("no NVIDIA driver: no /dev/nvidia<N> device node")
    assert {r.status for r in results[1:]} == {SKIPPED}
    assert verdict(results) == FAILED


def test_the_pytest_step_runs_gpu_tests_with_gpu_required(ctx: CheckContext, tmp_path: Path) -> None:
    tests = tmp_path / "gpu_tests"
    tests.mkdir()
    (tests / "test_one.py").write_text(
        "import os\n\ndef test_required():\n    assert os.environ['GPU_REQUIRED'] == '1'\n")
    ctx.pytest_args = (str(tests), "-o", "addopts=", "-c", os.devnull)
    results = {r.name: r for r in run_steps(ctx, skip=tuple(n for n in (
        "feature-discovery-vs-nvidia-smi", "exporter-under-load-vs-nvidia-smi", "device-plugin-allocates-a-gpu",
        "validator-host-driver")))}
    assert results["pytest-gpu"].status == PASSED, results["pytest-gpu"].details
    assert results["pytest-gpu"].summary == "1 gpu tests: 0 failed, 0 errors, 0 skipped"


def test_the_cdi_step_runs_only_with_nvidia_ctk(ctx: CheckContext) -> None:
    assert cdi_spec_vs_nvidia_ctk(ctx).status == SKIPPED
