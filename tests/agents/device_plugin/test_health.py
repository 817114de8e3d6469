"""Health: which XIDs count, the two variables, recovery after a quiet period, GPUs NVML will not watch, XIDs
from a device NVML cannot name, and the simulated NVML's own events."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from gpu_operator.agents.device_plugin.devices import PluginDevice, build_resources
from gpu_operator.agents.device_plugin.health import DEFAULT_IGNORED_XIDS, HealthMonitor, HealthPolicy, health_policy
from gpu_operator.agents.device_plugin.settings import MigStrategy, Settings, resolve_settings
from gpu_operator.agents.nvml import DeviceEvent, EventKind, GpuInfo, Nvml, NvmlError, open_nvml
from gpu_operator.faults import DEVICE_PLUGIN_SKIPPED_XIDS, classify_xid
from tests.agents.device_plugin.harness import InjectableNvml, xid


def test_default_ignored_xids_are_nvidias() -> None:
    """NVIDIA k8s-device-plugin v0.20.0 internal/rm/health.go `getDisabledHealthCheckXids` (`ignoredXids`), read
    from the fault catalog's copy of it."""
    assert DEFAULT_IGNORED_XIDS == {13, 31, 43, 45, 68, 109}
    assert DEFAULT_IGNORED_XIDS is DEVICE_PLUGIN_SKIPPED_XIDS
    assert health_policy({}, 0) == HealthPolicy(True, DEFAULT_IGNORED_XIDS, 0)


def test_xid_109_keeps_the_device_although_the_catalog_says_reset(caplog: pytest.LogCaptureFixture) -> None:
    """Where the plugin and the fault catalog disagree, the plugin follows NVIDIA's plugin: XID 109 (context switch
    timeout, the catalog's RESET_GPU) leaves the device Healthy (v0.20.0 internal/rm/health.go `checkHealth` skips
    it); the remediation acts on it through the catalog. Every other XID of the skip list is an application fault
    in the catalog too (68 is RESTART_APP)."""
    assert classify_xid(109).name == "reset-required" and classify_xid(109).quarantine
    assert {classify_xid(code).name for code in DEFAULT_IGNORED_XIDS - {109}} == {"application"}
    nvml = InjectableNvml("h100-8x")
    devices = [d for r in build_resources(nvml.devices(), Settings()) for d in r.devices]
    monitor = HealthMonitor(nvml, devices, health_policy({}, 0), lambda _: None)
    gpu = nvml.devices()[2]
    monitor.handle(xid(gpu, 109))
    assert monitor.unhealthy == frozenset()
    with caplog.at_level(logging.WARNING):
        monitor.handle(xid(gpu, 79))
    assert monitor.unhealthy == {gpu.uuid}
    assert "XID 79 (fallen-off-bus)" in caplog.text


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


def _simulated(tmp_path: Path, base: str, faults: str) -> Nvml:
    profile = tmp_path / "faulty.yaml"
    profile.write_text(f"extends: {base}\nfaults:\n{faults}")
    return open_nvml(f"fake:{profile}")


def _devices(nvml: Nvml, settings: Settings) -> list[PluginDevice]:
    return [d for r in build_resources(nvml.devices(), settings) for d in r.devices]


def _changes(nvml: Nvml, count: int) -> list[frozenset[str]]:
    """The first `count` health changes a started monitor of every device reports (then it stops)."""
    changes: list[frozenset[str]] = []
    enough = threading.Event()

    def changed(unhealthy: frozenset[str]) -> None:
        changes.append(unhealthy)
        if len(changes) == count:
            enough.set()

    monitor = HealthMonitor(nvml, _devices(nvml, Settings()), HealthPolicy(), changed)
    monitor.start()
    try:
        assert enough.wait(10), changes
    finally:
        monitor.stop()
        nvml.close()
    return changes


def test_the_simulated_nvmls_xid_reaches_the_monitor(tmp_path: Path) -> None:
    nvml = _simulated(tmp_path, "h100-8x", "  xids:\n    - {gpu: 6, xid: 13}\n    - {gpu: 3, xid: 79}\n")
    gpus = nvml.devices()
    assert _changes(nvml, 1) == [{gpus[3].uuid}]  # XID 79 on GPU 3 counts, XID 13 on GPU 6 does not


@pytest.mark.parametrize(
    ("faults", "unhealthy_gpus"),
    [
        ("  failing: [{gpus: [2], calls: [nvmlDeviceRegisterEvents], error: UNKNOWN}]\n", {2}),
        ("  failing: [{gpus: [1, 6], calls: [nvmlDeviceGetSupportedEventTypes], error: UNKNOWN}]\n", {1, 6}),
        ("  notSupported: [{gpus: [4], calls: [nvmlDeviceGetSupportedEventTypes]}]\n", {4}),
        # too old to support health checking: left healthy
        ("  notSupported: [{gpus: [3], calls: [nvmlDeviceRegisterEvents]}]\n", set()),
    ],
)
@pytest.mark.parametrize(("base", "strategy"), [("h100-8x", MigStrategy.NONE), ("a100-8x-mig", MigStrategy.MIXED)])
def test_a_gpu_whose_event_registration_fails_is_unhealthy_from_the_start(
    tmp_path: Path, faults: str, unhealthy_gpus: set[int], base: str, strategy: MigStrategy
) -> None:
    """Every device of a GPU NVML will not watch is Unhealthy before any event; a GPU too old for events is not.

    NVIDIA k8s-device-plugin v0.20.0 internal/rm/health.go `checkHealth`: a failing `GetSupportedEventTypes`
    ("unable to determine the supported events ... marking it as unhealthy") and a `RegisterEvents` that returns
    neither SUCCESS nor ERROR_NOT_SUPPORTED ("Marking device %v as unhealthy") send the device to `unhealthy`;
    ERROR_NOT_SUPPORTED only logs "too old to support healthchecking". MIG devices of that GPU go with it.
    """
    nvml = _simulated(tmp_path, base, faults)
    gpus = nvml.devices()
    devices = _devices(nvml, Settings(mig_strategy=strategy))
    changes: list[frozenset[str]] = []
    monitor = HealthMonitor(nvml, devices, HealthPolicy(recovery_period=1), changes.append, clock=_Clock())
    try:
        assert monitor.watch()
    finally:
        nvml.close()
    expected = {d.uuid for d in devices if d.gpu_uuid in {gpus[i].uuid for i in unhealthy_gpus}}
    assert monitor.unhealthy == expected
    assert changes == ([expected] if expected else [])
    assert strategy is MigStrategy.NONE or all(d.is_mig for d in devices)


def test_an_unwatched_device_does_not_recover_after_a_quiet_period() -> None:
    """No XID can arrive for a GPU NVML does not watch, so the opt-in recovery never clears it."""
    nvml, clock = InjectableNvml("h100-8x"), _Clock()
    gpu = nvml.devices()[2]
    nvml.unwatched = {gpu.uuid: NvmlError("Unknown Error", 999)}
    monitor, _ = _monitor(nvml, 10, clock)
    assert monitor.watch()
    clock.now += 1e6
    monitor.recover()
    assert monitor.unhealthy == {gpu.uuid}


def test_without_an_event_set_health_checks_are_off() -> None:
    """An event set that cannot be created turns health checking off for the plugin's life, logged, with every
    device left healthy.

    NVIDIA k8s-device-plugin v0.20.0 internal/rm/health.go `checkHealth` returns "failed to create event set",
    and internal/plugin/server.go `Start` logs "continuing with health checks disabled".
    """
    nvml = InjectableNvml("h100-8x")

    def no_event_set() -> dict[str, NvmlError]:
        raise NvmlError("Insufficient Resources", 17)

    def waited(timeout_ms: int) -> None:
        raise AssertionError("waited for events without an event set")

    nvml.watch_events = no_event_set  # type: ignore[method-assign]
    nvml.wait_event = waited  # type: ignore[method-assign]
    monitor, changes = _monitor(nvml, 0, _Clock())
    assert not monitor.watch()
    monitor._run()  # returns at once: no waiting, no marking
    assert changes == [] and monitor.unhealthy == frozenset()


def test_a_critical_xid_whose_device_cannot_be_named_marks_every_device() -> None:
    """NVIDIA k8s-device-plugin v0.20.0 internal/rm/health.go `checkHealth`: when `e.Device.GetUUID()` fails for
    an XID that is not skipped, "Marking all devices as unhealthy"; non-XID events and ignored XIDs are skipped
    before that."""
    nvml = InjectableNvml("h100-8x")
    monitor, changes = _monitor(nvml, 0, _Clock())
    monitor.handle(DeviceEvent(EventKind.XID, 8, 13, None, None))  # an application XID: ignored
    monitor.handle(DeviceEvent(EventKind.DOUBLE_BIT_ECC, 2, 0, None, None))  # not an XID
    assert changes == []
    monitor.handle(DeviceEvent(EventKind.XID, 8, 79, None, None))
    assert changes == [{g.uuid for g in nvml.devices()}]


def test_the_simulated_nvmls_unnamed_xid_reaches_the_monitor(tmp_path: Path) -> None:
    """Through the simulated NVML: an ignored unnamed XID changes nothing, a named one marks its GPU, an unnamed
    critical one every GPU (internal/rm/health.go `checkHealth`, as above)."""
    nvml = _simulated(tmp_path, "h100-8x", "  xids:\n    - {gpu: 3, xid: 13, unidentified: true}\n"
                                           "    - {gpu: 5, xid: 79}\n    - {gpu: 6, xid: 79, unidentified: true}\n")
    gpus = nvml.devices()
    assert _changes(nvml, 2) == [{gpus[5].uuid}, {g.uuid for g in gpus}]
