"""MPS sharing: the plugin advertises a shared resource only once its MPS control daemon answers.

The daemon here is not ready at first (its control socket appears only when the test says so), as on a node
where the device plugin starts before the `nvidia-device-plugin-mps-control-daemon` pod has started its daemons.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from gpu_operator.agents.device_plugin import PluginManager, resolve_settings
from gpu_operator.agents.device_plugin.mps import MpsDaemon, MpsDaemonError, ask, find_control, wait_for_daemon
from tests.agents.device_plugin.fake_mps import CLIENT, FakeMps, fake_mps
from tests.agents.device_plugin.harness import TIMEOUT, FakeKubelet, InjectableNvml, PluginClient, short_tempdir

MPS_CONFIG = "version: v1\nsharing:\n  mps:\n    resources:\n      - {name: gpu, replicas: 2}\n"


@dataclass
class Plugin:
    kubelet: FakeKubelet
    manager: PluginManager
    directory: str


@contextmanager
def plugin(mps: FakeMps, wait_seconds: float, config: str = MPS_CONFIG,
           retry_seconds: float = 30.0) -> Iterator[Plugin]:
    """A plugin set for an MPS config on a simulated 8-GPU node (not started), with a fake kubelet."""
    with short_tempdir() as directory:
        path = os.path.join(directory, "config.yaml")
        with open(path, "w") as handle:
            handle.write(config)
        kubelet = FakeKubelet(directory)
        kubelet.start()
        settings = resolve_settings({"kubelet_socket": kubelet.socket, "config_file": path,
                                     "mps_root": "/run/nvidia/mps", "mps_root_ctr_path": mps.root,
                                     "driver_root_ctr_path": os.path.join(directory, "driver"),
                                     "cdi_spec_dir": os.path.join(directory, "cdi")}, {})
        nvml = InjectableNvml("h100-8x")
        manager = PluginManager(settings, nvml, {"PATH": mps.bin_dir}, mps_wait_seconds=wait_seconds,
                                mps_poll_seconds=0.05, retry_seconds=retry_seconds)
        try:
            yield Plugin(kubelet, manager, directory)
        finally:
            manager.stop()
            kubelet.stop()
            nvml.close()


def _wait_for_calls(mps: FakeMps, count: int) -> None:
    """Until the client has been called `count` times; fails after the harness's bound."""
    deadline = time.monotonic() + TIMEOUT
    while len(mps.calls()) < count:
        assert time.monotonic() < deadline, f"the plugin asked the MPS daemon {len(mps.calls())} times, not {count}"
        time.sleep(0.02)


def test_replicas_are_advertised_only_once_the_mps_daemon_answers() -> None:
    """Nothing is served or registered while the daemon does not answer; once it does, the replicas are.

    NVIDIA k8s-device-plugin v0.20.0: internal/plugin/server.go `nvidiaDevicePlugin.Start` calls
    `mpsOptions.waitForDaemon` (internal/plugin/mps.go) before `Serve` and `Register`, which asks the daemon
    through cmd/mps-control-daemon/mps/daemon.go `Daemon.AssertHealthy` / `EchoPipeToControl`
    (`get_default_active_thread_percentage` through `nvidia-cuda-mps-control` with `CUDA_MPS_PIPE_DIRECTORY`).
    """
    with fake_mps(ready=False) as mps, plugin(mps, wait_seconds=TIMEOUT) as p:
        outcome: queue.Queue[BaseException | None] = queue.Queue()

        def start() -> None:
            try:
                p.manager.start()
                outcome.put(None)
            except BaseException as error:  # handed to the test thread
                outcome.put(error)

        starter = threading.Thread(target=start, daemon=True)
        starter.start()
        _wait_for_calls(mps, 3)  # the plugin keeps asking the daemon that does not answer yet
        assert p.kubelet.registrations.empty()
        assert not os.path.exists(os.path.join(p.directory, "nvidia-gpu.sock"))
        assert starter.is_alive()
        mps.daemon.start()
        assert outcome.get(timeout=TIMEOUT) is None
        starter.join(TIMEOUT)
        assert p.kubelet.next_registration().resource_name == "nvidia.com/gpu"
        assert mps.daemon.commands == ["get_default_active_thread_percentage"]
        client = PluginClient(os.path.join(p.directory, "nvidia-gpu.sock"))
        try:
            assert len(client.watch().devices) == 16
        finally:
            client.close()
        call = mps.calls()[-1]
        assert (call["pipe"], call["log"]) == (os.path.join(mps.root, "nvidia.com/gpu", "pipe"),
                                               os.path.join(mps.root, "nvidia.com/gpu", "log"))


def test_a_daemon_that_never_answers_fails_start_with_a_clear_error_and_nothing_running() -> None:
    """After the bounded wait the start fails naming the resource, the pipe directory and the daemon's answer.

    NVIDIA v0.20.0 internal/plugin/server.go `Start` fails with "error waiting for MPS daemon" (and
    cmd/nvidia-device-plugin/main.go `startPlugins` retries it); ours waits a bounded time, then fails the start.
    """
    # long enough for two asks on a loaded machine (each runs the fake control program, a Python start-up)
    with fake_mps(ready=False) as mps, plugin(mps, wait_seconds=3.0) as p:
        pipe = os.path.join(mps.root, "nvidia.com/gpu", "pipe")
        with pytest.raises(MpsDaemonError) as raised:
            p.manager.start()
        message = str(raised.value)
        assert f"the MPS control daemon of nvidia.com/gpu did not answer on {pipe} within 3 s" in message
        assert "Cannot find MPS control daemon process" in message
        assert "nvidia-device-plugin-mps-control-daemon" in message
        assert len(mps.calls()) >= 2
        assert p.kubelet.registrations.empty()
        assert sorted(os.listdir(p.directory)) == ["config.yaml", "kubelet.sock"]


def test_after_a_kubelet_restart_the_daemon_is_asked_again_before_registering() -> None:
    """A restart re-checks the daemon; while it does not answer nothing registers, and the retry registers later.

    NVIDIA v0.20.0 cmd/nvidia-device-plugin/main.go `start` restarts every plugin when kubelet.sock is created,
    and internal/plugin/server.go `Start` asks the MPS daemon again on each start (retried every 30 s on failure).
    """
    with fake_mps() as mps, plugin(mps, wait_seconds=TIMEOUT, retry_seconds=0.2) as p:
        p.manager.start()
        assert p.kubelet.next_registration().resource_name == "nvidia.com/gpu"
        mps.daemon.stop()
        asked = len(mps.calls())
        p.kubelet.restart()
        _wait_for_calls(mps, asked + 1)
        assert p.kubelet.registrations.empty()
        assert not os.path.exists(os.path.join(p.directory, "nvidia-gpu.sock"))
        mps.daemon.start()
        assert p.kubelet.next_registration().resource_name == "nvidia.com/gpu"


def test_time_slicing_does_not_wait_for_any_daemon() -> None:
    config = MPS_CONFIG.replace("mps:", "timeSlicing:")
    with fake_mps(ready=False) as mps, plugin(mps, wait_seconds=TIMEOUT, config=config) as p:
        p.manager.start()
        assert p.kubelet.next_registration().resource_name == "nvidia.com/gpu"
        assert mps.calls() == []


def test_a_missing_client_is_a_clear_error(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(MpsDaemonError, match=rf"needs the driver's {CLIENT}, which is neither on PATH nor in "):
        find_control({"PATH": str(tmp_path)}, str(tmp_path))


def test_the_client_is_found_under_the_driver_root(tmp_path: os.PathLike[str]) -> None:
    with fake_mps() as mps:
        driver_bin = os.path.join(str(tmp_path), "usr", "bin")
        os.makedirs(driver_bin)
        os.symlink(os.path.join(mps.bin_dir, CLIENT), os.path.join(driver_bin, CLIENT))
        assert find_control({"PATH": str(tmp_path)}, str(tmp_path)) == os.path.join(driver_bin, CLIENT)


def test_ask_sends_the_command_and_returns_the_answer() -> None:
    with fake_mps() as mps:
        daemon = MpsDaemon("nvidia.com/gpu", mps.root)
        control = find_control({"PATH": mps.bin_dir}, "/")
        assert ask(daemon, "get_default_active_thread_percentage", control) == "25.0"
        with pytest.raises(MpsDaemonError, match="unknown command 'quit_now'"):
            ask(daemon, "quit_now", control)


def test_a_stop_ends_the_wait() -> None:
    with fake_mps(ready=False) as mps:
        stop = threading.Event()
        stop.set()
        with pytest.raises(MpsDaemonError, match="stopped while waiting"):
            wait_for_daemon(MpsDaemon("nvidia.com/gpu", mps.root), find_control({"PATH": mps.bin_dir}, "/"),
                            timeout=TIMEOUT, poll=0.05, stop=stop)
