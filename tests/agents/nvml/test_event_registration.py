"""Which GPUs the event watch cannot watch, and events whose device NVML cannot name, on the simulated library."""

from __future__ import annotations

from pathlib import Path

import pynvml
import pytest

from gpu_operator.agents.nvml import EventKind, NvmlError
from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.simulated import ProfileError, SimulatedLibrary, SimulatedPciBus, load_profile


def _open(tmp_path: Path, faults: str) -> LibraryNvml:
    path = tmp_path / "faulty.yaml"
    path.write_text(f"extends: h100-8x\nfaults:\n{faults}")
    profile = load_profile(str(path))
    return LibraryNvml.open(SimulatedLibrary(profile, sleep=lambda _: None), SimulatedPciBus(profile))


@pytest.mark.parametrize(
    ("faults", "unwatched"),
    [
        # registration refused with an error other than "not supported": not watched
        ("  failing: [{gpus: [2], calls: [nvmlDeviceRegisterEvents], error: UNKNOWN}]\n",
         {2: pynvml.NVML_ERROR_UNKNOWN}),
        # the supported event types cannot be read, whatever the error: not watched
        ("  failing: [{gpus: [4], calls: [nvmlDeviceGetSupportedEventTypes], error: GPU_IS_LOST}]\n",
         {4: pynvml.NVML_ERROR_GPU_IS_LOST}),
        ("  notSupported: [{gpus: [5], calls: [nvmlDeviceGetSupportedEventTypes]}]\n",
         {5: pynvml.NVML_ERROR_NOT_SUPPORTED}),
        # "not supported" from the registration is a GPU too old for events: skipped, but not a failure
        ("  notSupported: [{gpus: [3], calls: [nvmlDeviceRegisterEvents]}]\n", {}),
    ],
)
def test_unwatched_gpus_by_uuid_with_the_error(tmp_path: Path, faults: str, unwatched: dict[int, int]) -> None:
    nvml = _open(tmp_path, faults)
    uuids = [g.uuid for g in nvml.devices()]
    found = nvml.watch_events()
    assert {uuid: error.code for uuid, error in found.items()} == {uuids[i]: code for i, code in unwatched.items()}
    assert all(isinstance(error, NvmlError) for error in found.values())
    assert nvml.watch_events() == found  # registered once


def test_an_event_whose_device_cannot_be_named_has_no_uuid(tmp_path: Path) -> None:
    nvml = _open(tmp_path, "  xids: [{gpu: 6, xid: 79, unidentified: true}, {gpu: 1, xid: 48}]\n")
    nvml.devices()
    first, second = nvml.wait_event(100), nvml.wait_event(100)
    assert first is not None and (first.kind, first.data, first.uuid, first.index) == (EventKind.XID, 79, None, None)
    assert second is not None and (second.data, second.index) == (48, 1)


def test_a_failing_call_names_an_nvml_error(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="'WHATEVER' is not an NVML error name"):
        _open(tmp_path, "  failing: [{calls: [nvmlDeviceRegisterEvents], error: WHATEVER}]\n")
    with pytest.raises(ProfileError, match="faults: no GPU 9"):
        _open(tmp_path, "  failing: [{gpus: [9], calls: [nvmlDeviceRegisterEvents]}]\n")
