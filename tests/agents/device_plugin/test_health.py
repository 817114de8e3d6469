"""Health: which XIDs count, the two variables, recovery after a quiet period, and the simulated NVML's own events."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from gpu_operator.agents.device_plugin.devices import build_resources
from gpu_operator.agents.device_plugin.health import DEFAULT_IGNORED_XIDS, HealthMonitor, HealthPolicy, health_policy
from gpu_operator.agents.device_plugin.settings import Settings, resolve_settings
from gpu_operator.agents.nvml import GpuInfo, NvmlError, open_nvml
from tests.agents.device_plugin.harness import InjectableNvml, xid


def test_default_ignored_xids_are_nvidias() -> None:
    assert DEFAULT_IGNORED_XIDS == {13, 31, 43, 45, 68, 109}
    assert health_policy({}, 0) == HealthPolicy(True, DEFAULT_IGNORED_XIDS, 0)


@pytest.mark.parametrize(
    ("environ", "enabled", "ignored"),
    [
        ({"DP_DISABLE_HEALTHCHECKS": "all"}, False, DEFAULT_IGNORED_XIDS),
        ({"DP_DISABLE_HEALTHCHECKS": "XIDS"}, False, DEFAULT_IGNORED_XIDS),
        ({"DP_DISABLE_HEALTHCHECKS": "48, 79"}, True, DEFAULT_IGNORED_XIDS | {48, 79}),
        ({"DP_ENABLE_HEALTHCHECKS": "13,31"}, True, DEFAULT_IGNORED_XIDS - {13, 31}),
        ({"DP_ENABLE_HEALTHCHECKS": "all"}, True, frozenset()),
        # an item all/xids anywhere in the list means every XID, the rest of the list notwithstanding
        ({"DP_DISABLE_HEALTHCHECKS": "xids,48"}, False, DEFAULT_IGNORED_XIDS),
        ({"DP_DISABLE_HEALTHCHECKS": "48,all"}, False, DEFAULT_IGNORED_XIDS),
        # junk items are skipped; the numbers beside them still count
        ({"DP_DISABLE_HEALTHCHECKS": "junk"}, True, DEFAULT_IGNORED_XIDS),
        ({"DP_DISABLE_HEALTHCHECKS": "48,4x,-1,+5,4_9,,79 "}, True, DEFAULT_IGNORED_XIDS | {48, 79}),
        ({"DP_ENABLE_HEALTHCHECKS": "junk,13"}, True, DEFAULT_IGNORED_XIDS - {13}),
        # disabling all XIDs turns checking off even when single XIDs are enabled; enabling all turns it on
        ({"DP_DISABLE_HEALTHCHECKS": "all", "DP_ENABLE_HEALTHCHECKS": "48"}, False, DEFAULT_IGNORED_XIDS),
        ({"DP_DISABLE_HEALTHCHECKS": "all", "DP_ENABLE_HEALTHCHECKS": "all"}, True, frozenset()),
        # XID 0 is the "all" key in NVIDIA's map
        ({"DP_DISABLE_HEALTHCHECKS": "0"}, False, DEFAULT_IGNORED_XIDS),
        ({"DP_ENABLE_HEALTHCHECKS": "0"}, True, frozenset()),
    ],
)
def test_variables_read_as_nvidias_plugin_reads_them(environ: dict[str, str], enabled: bool,
                                                      ignored: frozenset[int]) -> None:
    """`DP_DISABLE_HEALTHCHECKS` / `DP_ENABLE_HEALTHCHECKS`: all/xids anywhere, junk skipped, disable-all wins.

    NVIDIA k8s-device-plugin v0.20.0, internal/rm/health.go: `newHealthCheckXIDs` (lower-cased, split at commas,
    trimmed; `all`/`xids` return the all-map at once; a value strconv.ParseUint refuses is logged and skipped),
    `getDisabledHealthCheckXids` (defaults ignored, then enabled XIDs switched back on), `disabledXIDs.IsAllDisabled`
    / `IsDisabled`, and `checkHealth`, which returns without checking when IsAllDisabled.
    """
    policy = health_policy(environ, 0)
    assert (policy.enabled, policy.ignored) == (enabled, ignored)


def test_a_junk_xid_is_skipped_with_a_warning_naming_the_variable(caplog: pytest.LogCaptureFixture) -> None:
    """A malformed item is skipped, not fatal (NVIDIA v0.20.0 internal/rm/health.go `newHealthCheckXIDs`)."""
    with caplog.at_level(logging.WARNING):
        policy = health_policy({"DP_DISABLE_HEALTHCHECKS": "4x"}, 0)
    assert policy == HealthPolicy(True, DEFAULT_IGNORED_XIDS, 0)
    assert "DP_DISABLE_HEALTHCHECKS: ignoring '4x', which is not an XID number" in caplog.text


def test_a_junk_disable_list_does_not_stop_the_plugin_and_xids_still_count() -> None:
    """With `DP_DISABLE_HEALTHCHECKS=junk` the plugin starts and an XID 79 still marks the GPU.

    NVIDIA v0.20.0 internal/rm/health.go `newHealthCheckXIDs` skips the value and `checkHealth` carries on.
    """
    nvml = InjectableNvml("h100-8x")
    policy = health_policy({"DP_DISABLE_HEALTHCHECKS": "junk"}, 0)
    devices = [d for r in build_resources(nvml.devices(), Settings()) for d in r.devices]
    monitor = HealthMonitor(nvml, devices, policy, lambda _: None)
    gpu = nvml.devices()[5]
    monitor.handle(xid(gpu, 79))
    assert monitor.unhealthy == {gpu.uuid}


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _monitor(nvml: InjectableNvml, period: float, clock: _Clock) -> tuple[HealthMonitor, list[frozenset[str]]]:
    devices = [d for r in build_resources(nvml.devices(), Settings()) for d in r.devices]
    changes: list[frozenset[str]] = []
    return HealthMonitor(nvml, devices, HealthPolicy(recovery_period=period), changes.append, clock=clock), changes


def test_a_gpu_whose_xids_stop_recovers_after_the_quiet_period() -> None:
    nvml, clock = InjectableNvml("h100-8x"), _Clock()
    monitor, changes = _monitor(nvml, 300, clock)
    gpu = nvml.devices()[4]
    monitor.handle(xid(gpu, 79))
    assert changes == [frozenset({gpu.uuid})]
    clock.now += 200
    monitor.handle(xid(gpu, 48))  # another XID restarts the quiet period
    clock.now += 299
    monitor.recover()
    assert monitor.unhealthy == {gpu.uuid}
    clock.now += 1
    monitor.recover()
    assert changes[-1] == frozenset() and monitor.unhealthy == frozenset()


def test_with_period_zero_a_device_stays_unhealthy_as_in_nvidias_plugin() -> None:
    nvml, clock = InjectableNvml("h100-8x"), _Clock()
    monitor, _ = _monitor(nvml, 0, clock)
    gpu = nvml.devices()[0]
    monitor.handle(xid(gpu, 79))
    clock.now += 1e9
    monitor.recover()
    assert monitor.unhealthy == {gpu.uuid}


def test_by_default_a_device_never_recovers() -> None:
    """Recovery is opt-in: with the default settings an unhealthy device stays unhealthy, however long it is quiet.

    NVIDIA k8s-device-plugin v0.20.0 never sends a device healthy again: internal/rm/health.go `checkHealth` only
    ever writes devices to its `unhealthy` channel, and internal/plugin/server.go `ListAndWatch` only sets
    `Unhealthy` on what it reads from it.
    """
    settings = resolve_settings({}, {})
    assert settings.health_recovery_period == 0
    nvml, clock = InjectableNvml("h100-8x"), _Clock()
    devices = [d for r in build_resources(nvml.devices(), settings) for d in r.devices]
    policy = health_policy({}, settings.health_recovery_period)
    monitor = HealthMonitor(nvml, devices, policy, lambda _: None, clock=clock)
    gpu = nvml.devices()[3]
    monitor.handle(xid(gpu, 79))
    for _ in range(3):
        clock.now += 3600
        monitor.recover()
    assert monitor.unhealthy == {gpu.uuid}
    assert HealthPolicy().recovery_period == 0


def test_a_gpu_nvml_no_longer_answers_for_does_not_recover() -> None:
    nvml, clock = InjectableNvml("h100-8x"), _Clock()
    monitor, _ = _monitor(nvml, 10, clock)
    gpu = nvml.devices()[1]
    monitor.handle(xid(gpu, 79))
    real = nvml.devices
    nvml.devices = lambda: tuple(g if g.uuid != gpu.uuid else GpuInfo(g.index, g.uuid, lost=True) for g in real())
    clock.now += 11
    monitor.recover()
    assert monitor.unhealthy == {gpu.uuid}


def test_a_failing_event_wait_marks_every_device_unhealthy() -> None:
    nvml = InjectableNvml("h100-8x")
    failed = threading.Event()

    def broken(timeout_ms: int) -> None:
        failed.set()
        raise NvmlError("unknown error")

    nvml.wait_event = broken  # type: ignore[method-assign]
    monitor, changes = _monitor(nvml, 0, _Clock())
    monitor.start()
    try:
        assert failed.wait(10)
    finally:
        monitor.stop()
    assert changes[0] == {g.uuid for g in nvml.devices()}


def test_the_simulated_nvmls_xid_reaches_the_monitor(tmp_path: Path) -> None:
    profile = tmp_path / "xid.yaml"
    profile.write_text("extends: h100-8x\nfaults:\n  xids:\n    - {gpu: 6, xid: 13}\n    - {gpu: 3, xid: 79}\n")
    nvml = open_nvml(f"fake:{profile}")
    devices = [d for r in build_resources(nvml.devices(), Settings()) for d in r.devices]
    changed = threading.Event()
    monitor = HealthMonitor(nvml, devices, HealthPolicy(recovery_period=0), lambda _: changed.set())
    monitor.start()
    try:
        assert changed.wait(10)
    finally:
        monitor.stop()
        nvml.close()
    assert monitor.unhealthy == {devices[3].uuid}  # XID 79 on GPU 3 counts, XID 13 on GPU 6 does not
