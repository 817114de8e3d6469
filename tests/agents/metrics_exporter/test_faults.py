"""Faults: a lost GPU, a failing collector, NVML missing (and --fail-on-init-error=false), XID events."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gpu_operator.agents.exposition import SnapshotHolder
from gpu_operator.agents.metrics_exporter import CollectionLoop
from gpu_operator.agents.metrics_exporter.command import ExporterFailure, start
from gpu_operator.agents.metrics_exporter.settings import resolve_settings
from gpu_operator.agents.metrics_exporter.xid import XidTracker, XidWatch
from gpu_operator.agents.nvml import (
    DeviceEvent,
    GpuInfo,
    GpuSample,
    Nvml,
    NvmlError,
    PciBus,
    SystemInfo,
    open_nvml,
)
from tests.agents.metrics_exporter.support import (
    families_of,
    make_collector,
    parse,
)

AGENT = [sys.executable, "-m", "gpu_operator.agents.cli", "metrics-exporter"]
PROGRAM = "gpu-operator-agent metrics-exporter"


def profile(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return f"fake:{path}"


class FlakyNvml:
    """An `Nvml` whose sampling fails, or loses a GPU, from a given call on (the rest is delegated)."""

    def __init__(
        self, inner: Nvml, *, fail_on: frozenset[int] = frozenset(), lose: tuple[int, int] | None = None
    ) -> None:
        self._inner = inner
        self._fail_on = fail_on
        self._lose = lose
        self.calls = 0

    @property
    def pci(self) -> PciBus:
        return self._inner.pci

    def system(self) -> SystemInfo:
        return self._inner.system()

    def devices(self) -> tuple[GpuInfo, ...]:
        return self._inner.devices()

    def sample(self) -> tuple[GpuSample, ...]:
        self.calls += 1
        if self.calls in self._fail_on:
            raise NvmlError("Unknown Error", 999)
        samples = self._inner.sample()
        if self._lose is not None and self.calls >= self._lose[1]:
            index = self._lose[0]
            return tuple(GpuSample(s.index, s.uuid, s.timestamp, lost=True) if s.index == index else s for s in samples)
        return samples

    def wait_event(self, timeout_ms: int) -> DeviceEvent | None:
        return self._inner.wait_event(timeout_ms)

    def close(self) -> None:
        self._inner.close()


def gpus_in(body: bytes, family: str = "DCGM_FI_DEV_GPU_TEMP") -> list[str]:
    return sorted(s.labels["gpu"] for f in parse(body) if f.name == family for s in f.samples)


def test_a_gpu_lost_from_the_start_stops_only_its_series(tmp_path: Path) -> None:
    spec = profile(tmp_path, "lost", "extends: h100-8x\nfaults:\n  lostGpus: [3]\n")
    snapshot = make_collector("h100-8x", nvml=open_nvml(spec)).collect()
    assert gpus_in(snapshot.body) == ["0", "1", "2", "4", "5", "6", "7"]
    assert gpus_in(snapshot.body, "DCGM_FI_DEV_XID_ERRORS") == ["0", "1", "2", "4", "5", "6", "7"]
    assert snapshot.health.ok  # degraded: reported, yet the exporter keeps serving
    # lost before NVML gave its UUID away
    assert snapshot.health.reasons == ("GPU 3 (unknown UUID) is lost: its metrics are no longer reported",)


def test_a_gpu_lost_while_running(tmp_path: Path) -> None:
    flaky = FlakyNvml(open_nvml("fake:h100-8x"), lose=(5, 2))
    collector = make_collector("h100-8x", nvml=flaky)
    first, second = collector.collect(), collector.collect()
    assert "5" in gpus_in(first.body) and first.health.ok
    assert gpus_in(second.body) == ["0", "1", "2", "3", "4", "6", "7"]
    assert second.health.reasons[0].startswith("GPU 5 (GPU-e334bf29-4fd9-4564-962f-28df8c485be5) is lost")


def test_the_last_good_metrics_are_served_while_collection_fails() -> None:
    flaky = FlakyNvml(open_nvml("fake:h100-8x"), fail_on=frozenset({2, 3}))
    holder = SnapshotHolder()
    loop = CollectionLoop(make_collector("h100-8x", nvml=flaky).collect, holder, interval=60)
    assert loop.run_once()
    good = holder.current()
    assert not loop.run_once() and not loop.run_once()
    failing = holder.current()
    assert failing.body == good.body
    assert not failing.health.ok and loop.failures == 2
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(good.collected_at or 0))
    assert failing.health.reasons == (f"collection failed: Unknown Error; serving the metrics collected at {stamp}",)
    assert loop.run_once()
    assert holder.current().health.ok and loop.failures == 0 and holder.current().body != good.body


def test_a_failure_keeps_reasons_the_last_body_already_had(tmp_path: Path) -> None:
    spec = profile(tmp_path, "lost", "extends: h100-8x\nfaults:\n  lostGpus: [1]\n")
    flaky = FlakyNvml(open_nvml(spec), fail_on=frozenset({2}))
    holder = SnapshotHolder()
    loop = CollectionLoop(make_collector("h100-8x", nvml=flaky).collect, holder, interval=60)
    loop.run_once()
    loop.run_once()
    reasons = holder.current().health.reasons
    assert reasons[0].startswith("collection failed: Unknown Error") and reasons[1].startswith("GPU 1 (")


def test_the_loop_collects_on_its_interval_in_the_background() -> None:
    holder = SnapshotHolder()
    calls: list[float] = []
    collector = make_collector("t4-1x")

    def collect() -> object:
        calls.append(time.monotonic())
        return collector.collect()

    loop = CollectionLoop(collect, holder, interval=0.05)  # type: ignore[arg-type]
    loop.start()
    _wait_for(lambda: len(calls) >= 3, "three collections")
    loop.stop()
    assert holder.current().health.ok and b"DCGM_FI_DEV_GPU_TEMP" in holder.current().body


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_", "GPU_OPERATOR_"))}
    env.update(extra)
    return env


def test_missing_nvml_exits_with_one_clear_line(tmp_path: Path) -> None:
    spec = profile(tmp_path, "no-driver", "extends: t4-1x\nfaults:\n  init: DRIVER_NOT_LOADED\n")
    done = subprocess.run([*AGENT, "--nvml", spec, "--address", "127.0.0.1:0"], capture_output=True, text=True,
                          timeout=60, env=_clean_env(), check=False)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{PROGRAM}: NVML is not available: ")
    assert "Driver Not Loaded" in lines[0]


def test_without_fail_on_init_error_it_serves_a_node_without_gpus(tmp_path: Path) -> None:
    spec = profile(tmp_path, "no-driver", "extends: t4-1x\nfaults:\n  init: DRIVER_NOT_LOADED\n")
    cli = {"nvml": spec, "fail_on_init_error": "false", "address": "127.0.0.1:0", "collect_interval_ms": "60000"}
    exporter = start(resolve_settings(cli, {}), {})
    try:
        _wait_for(lambda: exporter.holder.current().collected_at is not None, "the first collection")
        snapshot = exporter.holder.current()
        assert snapshot.body == b"" and snapshot.health.ok
        assert exporter.collector is not None and exporter.collector.entities == ()
    finally:
        exporter.stop()


def test_a_bad_collectors_file_fails_start_up(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("nonsense\n")
    with pytest.raises(ExporterFailure, match="bad.csv: line 1"):
        start(resolve_settings({"nvml": "fake:t4-1x", "collectors": str(bad), "address": "127.0.0.1:0"}, {}), {})


def test_xid_events_set_the_last_xid_of_their_gpu(tmp_path: Path) -> None:
    spec = profile(tmp_path, "xid", "extends: h100-8x\nfaults:\n  xids:\n    - {gpu: 2, xid: 79}\n")
    node = open_nvml(spec)
    tracker = XidTracker()
    watch = XidWatch(node, tracker, wait_ms=20)
    watch.start()
    try:
        _wait_for(lambda: tracker.last(2) == 79, "the XID event")
    finally:
        watch.stop()
    family = families_of(make_collector("h100-8x", nvml=node, xids=tracker), cycles=1)["DCGM_FI_DEV_XID_ERRORS"]
    by_gpu = {s.labels["gpu"]: (s.value, s.labels["err_code"], s.labels["err_msg"]) for s in family.samples}
    assert by_gpu["2"] == (79.0, "79", "GPU has fallen off the bus")
    assert {v for k, v in by_gpu.items() if k != "2"} == {(0.0, "0", "No Error")}


def test_xid_events_of_a_mig_device_go_to_its_gpu_instance(tmp_path: Path) -> None:
    spec = profile(
        tmp_path, "mig-xid",
        "extends: a100-4x-mixed-mig\nfaults:\n  xids:\n    - {gpu: 0, xid: 43, gpuInstance: 8, computeInstance: 0}\n",
    )
    node = open_nvml(spec)
    tracker = XidTracker()
    watch = XidWatch(node, tracker, wait_ms=20)
    watch.start()
    try:
        _wait_for(lambda: tracker.last(0, 8) == 43, "the XID event")
    finally:
        watch.stop()
    family = families_of(make_collector("a100-4x-mixed-mig", nvml=node, xids=tracker), cycles=1)[
        "DCGM_FI_DEV_XID_ERRORS"
    ]
    values = {(s.labels["gpu"], s.labels.get("GPU_I_ID")): s.value for s in family.samples}
    assert values[("0", "8")] == 43.0
    assert values[("0", "7")] == 0.0 and values[("2", None)] == 0.0
