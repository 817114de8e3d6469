"""An exporter without the MIG monitor capability still exports every MIG instance's series.

Without `NVIDIA_MIG_MONITOR_DEVICES=all` (the runtime then gives the container no MIG monitor capability) NVML
answers GPU and compute instance queries with NO_PERMISSION, as it does for any process lacking the capability.
The render asks for the capability; this is the failure path if it is missing: the MIG devices, their
attributes and their telemetry remain readable, so the series stay, named from the devices' own attributes.
"""

from __future__ import annotations

from pathlib import Path

import pynvml
import pytest

from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.simulated import SimulatedLibrary, SimulatedPciBus, load_profile

from tests.agents.metrics_exporter.support import families_of, make_collector


def _node(tmp_path: Path, faults: str) -> LibraryNvml:
    path = tmp_path / "node.yaml"
    path.write_text(f"extends: a100-4x-mixed-mig\nname: no-mig-monitor\n{faults}")
    profile = load_profile(str(path))
    return LibraryNvml.open(SimulatedLibrary(profile, sleep=lambda s: None), SimulatedPciBus(profile))


def _instances(nvml: LibraryNvml) -> list[tuple[str, str | None, str | None]]:
    temperature = families_of(make_collector("a100-4x-mixed-mig", nvml=nvml))["DCGM_FI_DEV_GPU_TEMP"]
    return sorted(
        (s.labels["gpu"], s.labels.get("GPU_I_PROFILE"), s.labels.get("GPU_I_ID")) for s in temperature.samples
    )


def test_the_simulated_node_refuses_instance_queries_without_the_capability(tmp_path: Path) -> None:
    nvml = _node(tmp_path, "faults:\n  migPermission: [0, 1]\n")
    library = nvml._lib
    parent = library.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NoPermission):
        library.nvmlDeviceGetGpuInstanceById(parent, 7)


def test_no_permission_on_instance_queries_keeps_every_series(tmp_path: Path) -> None:
    permitted = _instances(_node(tmp_path, ""))
    refused = _instances(_node(tmp_path, "faults:\n  migPermission: [0, 1]\n"))
    assert refused == permitted
    assert ("1", "3g.40gb", "2") in refused
    assert sum(1 for gpu, _, gi in refused if gpu in ("0", "1") and gi is not None) == 11
