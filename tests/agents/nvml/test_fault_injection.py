"""Faults injected into a running simulated node: the grammar, the fault file, resets and reboots.

The values reach the agents through the NVML calls real faults change: the volatile DBE and remapped-rows field
values, NVLink state, the recovery action field (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION), "GPU is lost" and
"driver not loaded" return codes, XID events from the event set, and the compute processes of a GPU.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pynvml
import pytest

from gpu_operator.agents.nvml import NvmlDriverNotLoaded, open_nvml
from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.health import HealthReader
from gpu_operator.agents.nvml.simulated import (
    FAULTS_ENV,
    InjectionError,
    SimulatedLibrary,
    SimulatedPciBus,
    load_profile,
    parse_injection,
)
from gpu_operator.agents.nvml.simulated.injection import Injection
from gpu_operator.agents.nvml.underlying import library_of

PROFILE = load_profile("h100-8x")


def _open(library: SimulatedLibrary) -> LibraryNvml:
    return LibraryNvml.open(library, SimulatedPciBus(PROFILE))


@pytest.mark.parametrize(("line", "parsed"), [
    ("xid 79 on GPU 3", Injection("xid", 79, 3)),
    ("  nvlink-down 17 on GPU 0   # a comment", Injection("nvlink-down", 17, 0)),
    ("dbe on GPU 1", Injection("dbe", None, 1)),
    ("reboot", Injection("reboot")),
    ("# only a comment", None),
    ("", None),
])
def test_grammar(line: str, parsed: Injection | None) -> None:
    assert parse_injection(line) == parsed


@pytest.mark.parametrize(("line", "problem"), [
    ("xid on GPU 3", "is written 'xid <number> on GPU <index>'"),
    ("dbe 2 on GPU 1", "is written 'dbe on GPU <index>'"),
    ("dbe", "needs its GPU"),
    ("reboot on GPU 1", "is node-wide"),
    ("melt on GPU 1", "unknown fault 'melt'"),
    ("xid 79 on gpu three", "cannot read fault"),
])
def test_grammar_errors_name_the_fix(line: str, problem: str) -> None:
    with pytest.raises(InjectionError, match=problem):
        parse_injection(line)


def test_injected_health_faults_read_through_nvml_and_a_reset_clears_its_gpus_only() -> None:
    library = SimulatedLibrary(PROFILE)
    nvml = _open(library)
    reader = HealthReader(library)
    library.inject("dbe on GPU 1", "row-remap-pending on GPU 1", "recovery-action 4 on GPU 1",
                   "nvlink-crc 500 on GPU 1", "nvlink-down 3 on GPU 2", "dbe on GPU 2")
    health = reader.read(1)
    assert (health.ecc_dbe_volatile, health.remapped_rows_pending, health.recovery_action,
            health.nvlink_crc_errors) == (1, 1, 4, 500)
    assert nvml.devices()[2].nvlinks[3] is False
    assert library.reset_gpus([1]) is None
    assert reader.read(1).ecc_dbe_volatile == 0 and reader.read(2).ecc_dbe_volatile == 1
    assert nvml.devices()[2].nvlinks[3] is False


def test_a_lost_gpu_a_failing_reset_and_a_busy_gpu() -> None:
    library = SimulatedLibrary(PROFILE)
    nvml = _open(library)
    library.inject("lost on GPU 4", "reset-fails on GPU 5", "process 77 on GPU 6")
    assert nvml.devices()[4].lost
    assert library.reset_gpus([5]) == "GPU reset failed for GPU 5"
    assert library.reset_gpus([6]) == "GPUs in use: GPU 6 by pids [77]"
    assert [p.pid for p in nvml.sample(processes=True)[6].processes] == [77]
    assert library.reset_gpus([4]) is None
    assert not nvml.devices()[4].lost
    library.reboot()
    assert library.reset_gpus([5, 6]) is None


def test_an_injected_xid_wakes_a_waiting_event_set() -> None:
    library = SimulatedLibrary(PROFILE)
    nvml = _open(library)
    nvml.watch_events()
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(nvml.wait_event(60_000)))
    waiter.start()
    library.inject("xid 48 on GPU 2")
    waiter.join(timeout=30)
    [event] = got
    assert (event.data, event.index) == (48, 2)  # type: ignore[attr-defined]


def test_the_fault_file_is_the_nodes_state_and_its_xids_are_delivered_once(tmp_path: Path) -> None:
    faults = tmp_path / "faults"
    environ = {FAULTS_ENV: str(faults)}
    first = open_nvml("fake:h100-8x", environ=environ)
    first.watch_events()
    faults.write_text("lost on GPU 3\nxid 79 on GPU 3\nxid 13 on GPU 0\n")
    assert first.devices()[3].lost
    lost = first.wait_event(5_000)
    assert lost is not None and (lost.data, lost.uuid) == (79, None)  # a lost GPU cannot be named
    event = first.wait_event(5_000)
    assert event is not None and (event.data, event.index) == (13, 0)
    later = open_nvml("fake:h100-8x", environ=environ)
    later.watch_events()
    assert later.devices()[3].lost
    assert later.wait_event(10) is None
    with faults.open("a") as stream:
        stream.write("xid 48 on GPU 1\nnonsense\nreset on GPU 3\n")
    event = later.wait_event(5_000)
    assert event is not None and (event.data, event.index) == (48, 1)
    assert not later.devices()[3].lost and not first.devices()[3].lost


def test_driver_unloaded_fails_every_call_and_init_until_it_loads_or_the_node_reboots(tmp_path: Path) -> None:
    faults = tmp_path / "faults"
    faults.write_text("")
    environ = {FAULTS_ENV: str(faults)}
    nvml = open_nvml("fake:t4-1x", environ=environ)
    library = library_of(nvml)
    assert library is not None
    library.inject("driver-unloaded")
    with pytest.raises(NvmlDriverNotLoaded):
        nvml.devices()
    with pytest.raises(NvmlDriverNotLoaded):
        open_nvml("fake:t4-1x", environ=environ)
    library.reboot()
    assert len(open_nvml("fake:t4-1x", environ=environ).devices()) == 1


def test_thermal_violation_time_grows_while_the_fault_holds() -> None:
    library = SimulatedLibrary(PROFILE)
    _open(library)
    reader = HealthReader(library)
    assert reader.read(0).thermal_violation_ns == 0
    library.inject("thermal on GPU 0")
    assert [reader.read(0).thermal_violation_ns for _ in range(2)] == [1_000_000_000, 2_000_000_000]
    assert library.injected(0).thermal


def test_health_fields_a_driver_lacks_read_none() -> None:
    """The T4 has no NVLink and no row remapping: those fields answer "not supported" and read None."""
    library = SimulatedLibrary(load_profile("t4-1x"))
    LibraryNvml.open(library, SimulatedPciBus(load_profile("t4-1x")))
    health = HealthReader(library).read(0)
    assert health.nvlink_crc_errors is None and health.ecc_dbe_volatile == 0
    assert pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION == 230
