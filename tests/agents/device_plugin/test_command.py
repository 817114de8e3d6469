"""The command: start-up errors, the SIGHUP reload a device-plugin.config label switch sends, the real process."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from gpu_operator.agents import cli
from gpu_operator.agents.device_plugin.command import PluginFailure, main, serve
from gpu_operator.agents.device_plugin.settings import Settings, resolve_settings
from gpu_operator.agents.signals import RELOAD
from tests.agents.device_plugin.harness import TIMEOUT, FakeKubelet, PluginClient, short_tempdir

PLAIN = "version: v1\n"
SHARED = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - {name: gpu, replicas: 3}\n"


class Signals:
    """A SignalSource the test feeds."""

    def __init__(self) -> None:
        self.queue: queue.Queue[int] = queue.Queue()

    def wait(self, timeout: float | None) -> int | None:
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None


@contextmanager
def running(config: str, profile: str = "h100-8x") -> Iterator[tuple[FakeKubelet, Signals, Path, str]]:
    with short_tempdir() as directory:
        kubelet = FakeKubelet(directory)
        kubelet.start()
        path = Path(directory) / "config.yaml"
        path.write_text(config)
        environ = {"CONFIG_FILE": str(path), "KUBELET_SOCKET": kubelet.socket, "GPU_OPERATOR_NVML": f"fake:{profile}",
                   "VALIDATIONS_DIR": ""}
        signals = Signals()
        outcome: queue.Queue[object] = queue.Queue()

        def run() -> None:
            try:
                outcome.put(serve(lambda env: resolve_settings({}, env), environ, signals))
            except BaseException as error:  # handed to the test thread
                outcome.put(error)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            yield kubelet, signals, path, directory
        finally:
            signals.queue.put(signal.SIGTERM)
            thread.join(TIMEOUT)
            kubelet.stop()
        assert not thread.is_alive()
        assert outcome.get_nowait() == 0


def _count(directory: str) -> int:
    client = PluginClient(os.path.join(directory, "nvidia-gpu.sock"))
    try:
        return len(client.watch().devices)
    finally:
        client.close()


def test_sighup_applies_the_config_the_label_selected() -> None:
    with running(PLAIN) as (kubelet, signals, path, directory):
        kubelet.next_registration()
        assert _count(directory) == 8
        path.write_text(SHARED)  # what the config-manager does before it sends SIGHUP
        signals.queue.put(RELOAD)
        assert kubelet.next_registration().resource_name == "nvidia.com/gpu"
        assert _count(directory) == 24


def test_a_bad_config_on_sighup_leaves_the_running_plugins_alone() -> None:
    with running(SHARED) as (kubelet, signals, path, directory):
        kubelet.next_registration()
        path.write_text("version: v3\n")
        signals.queue.put(RELOAD)
        with pytest.raises(queue.Empty):
            kubelet.registrations.get(timeout=1.0)
        assert _count(directory) == 24


def test_a_layout_the_new_config_refuses_restores_the_previous_plugins() -> None:
    with running(PLAIN, "a100-4x-mixed-mig") as (kubelet, signals, path, directory):
        kubelet.next_registration()
        assert _count(directory) == 4
        path.write_text("version: v1\nflags: {migStrategy: single}\n")  # MIG and non-MIG GPUs: single refuses
        signals.queue.put(RELOAD)
        assert kubelet.next_registration().resource_name == "nvidia.com/gpu"  # the previous set, registered again
        assert _count(directory) == 4


def test_start_up_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - {name: gpu, replicas: 1}\n")
    assert main(["--config-file", str(bad), "--nvml", "fake:h100-8x", "--validations-dir", ""], environ={}) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("gpu-operator-agent device-plugin: unable to load config file")
    assert "number of replicas for nvidia.com/gpu must be >= 2" in error and "\n" not in error
    assert main(["--mig-strategy", "single", "--nvml", "fake:a100-4x-mixed-mig", "--kubelet-socket", "",
                 "--validations-dir", ""], environ={}) == 1
    assert "MIG disabled beside MIG-enabled GPUs" in capsys.readouterr().err


def test_serve_raises_for_settings_it_cannot_load() -> None:
    with pytest.raises(PluginFailure, match="MIG_STRATEGY"):
        serve(lambda env: resolve_settings({}, env), {"MIG_STRATEGY": "x"}, Signals())


def test_the_agent_is_registered_with_the_entry_point() -> None:
    assert cli.AGENTS["device-plugin"] == "gpu_operator.agents.device_plugin.command"


def test_the_process_registers_reloads_on_sighup_and_exits_on_sigterm() -> None:
    with short_tempdir() as directory:
        kubelet = FakeKubelet(directory)
        kubelet.start()
        environ = {**os.environ, "KUBELET_SOCKET": kubelet.socket, "GPU_OPERATOR_NVML": "fake:t4-1x",
                   "VALIDATIONS_DIR": ""}
        process = subprocess.Popen([sys.executable, "-m", "gpu_operator.agents.cli", "device-plugin"], env=environ,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            assert kubelet.next_registration().resource_name == "nvidia.com/gpu"
            process.send_signal(signal.SIGHUP)
            assert kubelet.next_registration().endpoint == "nvidia-gpu.sock"
            process.send_signal(signal.SIGTERM)
            assert process.wait(TIMEOUT) == 0
            assert os.listdir(directory) == ["kubelet.sock"]
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(TIMEOUT)
            assert process.stderr is not None
            process.stderr.close()
            kubelet.stop()


def test_under_the_operator_the_plugin_waits_for_driver_ready_and_takes_its_paths(tmp_path: Path) -> None:
    validations = tmp_path / "validations"
    validations.mkdir()
    with short_tempdir() as plugins:
        _wait_and_run(validations, plugins)


def _wait_and_run(validations: Path, plugins: str) -> None:
    signals = Signals()
    kubelet = FakeKubelet(plugins)
    kubelet.start()
    environ = {"VALIDATIONS_DIR": str(validations), "KUBELET_SOCKET": kubelet.socket,
               "GPU_OPERATOR_NVML": "fake:t4-1x", "NVIDIA_DRIVER_ROOT": "/"}
    seen: list[str] = []

    def load(env: Mapping[str, str]) -> Settings:
        settings = resolve_settings({}, env)
        seen.append(settings.driver_root)
        return settings

    outcome: queue.Queue[int] = queue.Queue()
    thread = threading.Thread(target=lambda: outcome.put(serve(load, environ, signals)), daemon=True)
    thread.start()
    try:
        signals.queue.put(RELOAD)  # not a reason to stop waiting
        with pytest.raises(queue.Empty):
            kubelet.registrations.get(timeout=0.5)
        (validations / "driver-ready").write_text("IS_HOST_DRIVER=false\nNVIDIA_DRIVER_ROOT=/run/nvidia/driver\n")
        assert kubelet.next_registration().resource_name == "nvidia.com/gpu"
    finally:
        signals.queue.put(signal.SIGTERM)
        thread.join(TIMEOUT)
        kubelet.stop()
    assert outcome.get_nowait() == 0
    assert seen[0] == "/" and seen[-1] == "/run/nvidia/driver"


def test_a_stop_signal_ends_the_wait_for_the_driver(tmp_path: Path) -> None:
    signals = Signals()
    signals.queue.put(signal.SIGTERM)
    opened: list[Settings] = []
    assert serve(lambda env: resolve_settings({}, env), {"VALIDATIONS_DIR": str(tmp_path)}, signals,
                 open_nvml_for=lambda s: opened.append(s)) == 0  # type: ignore[func-returns-value,arg-type]
    assert opened == []


def test_loaded_storage_modules_turn_gds_and_gdrcopy_on_unless_the_daemonset_decided(tmp_path: Path) -> None:
    from gpu_operator.agents.device_plugin.driver_ready import storage_defaults

    modules = tmp_path / "modules"
    modules.write_text("nvidia_fs 254976 0 - Live 0x0\ngdrdrv 24576 0 - Live 0x0\nnvidia 1 2 - Live 0x0\n")
    assert storage_defaults({}, str(modules)) == {
        "GDS_ENABLED": "true", "MOFED_ENABLED": "true", "GDRCOPY_ENABLED": "true"}
    decided = {"GDS_ENABLED": "false", "MOFED_ENABLED": "false", "GDRCOPY_ENABLED": "false"}
    assert storage_defaults(decided, str(modules)) == decided
    assert storage_defaults({"MOFED_ENABLED": "false"}, str(modules))["MOFED_ENABLED"] == "false"
    modules.write_text("nvidia 1 2 - Live 0x0\n")
    assert storage_defaults({}, str(modules)) == {}
    assert storage_defaults({"A": "1"}, str(tmp_path / "absent")) == {"A": "1"}


def test_mixed_with_a_partial_compute_instance_stops_the_plugin_with_the_reason(tmp_path: Path) -> None:
    """The plugin does not start (and so exits 1, in one line) on a MIG device no mixed resource covers.

    NVIDIA k8s-device-plugin v0.20.0 internal/rm/device_map.go `buildMigDeviceMap` ("does not match any resource
    patterns") failing cmd/nvidia-device-plugin/main.go `startPlugins`, which ends the program.
    """
    from tests.agents.device_plugin.test_devices import SMALL_COMPUTE_INSTANCE

    profile = tmp_path / "ci.yaml"
    profile.write_text(SMALL_COMPUTE_INSTANCE)
    signals = Signals()
    signals.queue.put(signal.SIGTERM)  # were it to start, it would stop at once
    with short_tempdir() as directory:
        environ = {"MIG_STRATEGY": "mixed", "GPU_OPERATOR_NVML": f"fake:{profile}", "VALIDATIONS_DIR": "",
                   "KUBELET_SOCKET": os.path.join(directory, "kubelet.sock")}
        with pytest.raises(PluginFailure, match=r"MIG device 0:1 has profile 1c\.2g\.20gb, whose compute instance is "
                                                r"smaller than its GPU instance"):
            serve(lambda env: resolve_settings({}, env), environ, signals)
        assert os.listdir(directory) == []
