"""MPS control daemons: a resource shared through MPS is advertised only once its daemon answers.

Under MPS sharing every shared resource has its own MPS control daemon, which the MPS control daemon DaemonSet
(NVIDIA's `mps-control-daemon`, the `nvidia-device-plugin-mps-control-daemon` pods) starts under the MPS root:
its pipe directory is `<root>/<resource>/pipe` and its log directory `<root>/<resource>/log`, with the resource's
full name (`/mps/nvidia.com/gpu/pipe`). Containers given a replica reach the daemon through that pipe directory,
so a replica handed out before the daemon listens there is a replica whose CUDA calls fail.

Talking to a daemon is the driver's MPS client's job: `nvidia-cuda-mps-control` is run with
`CUDA_MPS_PIPE_DIRECTORY` and `CUDA_MPS_LOG_DIRECTORY` naming the daemon's directories (and nothing else in its
environment), the command on its standard input; it prints the answer, and exits non-zero when no daemon
answered. Before it serves a shared resource NVIDIA's plugin asks the daemon
`get_default_active_thread_percentage`; this module asks the same, again every `poll` seconds until the daemon
answers or `timeout` seconds have passed, and then raises :class:`MpsDaemonError` naming the resource, the pipe
directory and the daemon's last answer. Each call of the client is bounded too, so a hung daemon cannot hang
the plugin.

The client is looked up on `PATH` (the NVIDIA container runtime puts it in `/usr/bin` when the container's
`NVIDIA_DRIVER_CAPABILITIES` include `compute`), then in the driver root's `usr/bin` and `bin`.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = [
    "MPS_CONTROL",
    "HEALTH_COMMAND",
    "WAIT_SECONDS",
    "POLL_SECONDS",
    "CALL_SECONDS",
    "MpsDaemonError",
    "MpsDaemon",
    "find_control",
    "ask",
    "wait_for_daemon",
]

_log = logging.getLogger(__name__)

#: The driver's MPS client.
MPS_CONTROL = "nvidia-cuda-mps-control"
#: The question NVIDIA's plugin asks a daemon to see that it is up (it answers with a percentage).
HEALTH_COMMAND = "get_default_active_thread_percentage"
#: How long the plugin waits for a daemon at start-up before it gives up.
WAIT_SECONDS = 120.0
#: How often a daemon that has not answered is asked again.
POLL_SECONDS = 1.0
#: The bound on one call of the client.
CALL_SECONDS = 10.0


class MpsDaemonError(RuntimeError):
    """An MPS control daemon did not answer (or its client could not be run)."""


@dataclass(frozen=True, slots=True)
class MpsDaemon:
    """The control daemon of one shared resource, under the MPS root as this process sees it."""

    resource: str
    root: str

    @property
    def pipe_dir(self) -> str:
        return os.path.join(self.root, self.resource, "pipe")

    @property
    def log_dir(self) -> str:
        return os.path.join(self.root, self.resource, "log")

    def environment(self) -> dict[str, str]:
        """The client's whole environment: the daemon's pipe and log directories."""
        return {"CUDA_MPS_PIPE_DIRECTORY": self.pipe_dir, "CUDA_MPS_LOG_DIRECTORY": self.log_dir}


def find_control(environ: Mapping[str, str], driver_root: str) -> str:
    """The path of `nvidia-cuda-mps-control`: on PATH, else under the driver root. Raises MpsDaemonError."""
    found = shutil.which(MPS_CONTROL, path=environ.get("PATH") or os.defpath)
    if found is not None:
        return found
    for directory in ("usr/bin", "bin"):
        candidate = os.path.join(driver_root, directory, MPS_CONTROL)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise MpsDaemonError(
        f"MPS sharing needs the driver's {MPS_CONTROL}, which is neither on PATH nor in {driver_root}/usr/bin: run "
        "the plugin with NVIDIA_DRIVER_CAPABILITIES including compute (or all) under the NVIDIA runtime, or mount "
        "the driver root at --driver-root-ctr-path")


def ask(daemon: MpsDaemon, command: str, control: str, timeout: float = CALL_SECONDS) -> str:
    """Send one command to the daemon through its client; its answer, or MpsDaemonError saying why not."""
    try:
        done = subprocess.run([control], input=command, env=daemon.environment(), capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as error:
        raise MpsDaemonError(f"{MPS_CONTROL} got no answer within {timeout:g} s") from error
    except OSError as error:
        raise MpsDaemonError(f"cannot run {control}: {error}") from error
    if done.returncode != 0:
        said = " ".join((done.stdout + done.stderr).split())
        raise MpsDaemonError(said or f"{MPS_CONTROL} exited with status {done.returncode}")
    return done.stdout.strip()


def wait_for_daemon(daemon: MpsDaemon, control: str, *, timeout: float = WAIT_SECONDS,
                    poll: float = POLL_SECONDS, stop: threading.Event | None = None,
                    clock: Callable[[], float] = time.monotonic) -> str:
    """Ask the daemon until it answers (its answer) or `timeout` passes or `stop` is set (MpsDaemonError).

    `timeout` 0 asks once.
    """
    deadline = clock() + timeout
    waiting = False
    while True:
        try:
            answer = ask(daemon, HEALTH_COMMAND, control)
        except MpsDaemonError as error:
            last = str(error)
        else:
            _log.info("MPS control daemon of %s answers on %s (default active thread percentage %s)",
                      daemon.resource, daemon.pipe_dir, answer or "?")
            return answer
        remaining = deadline - clock()
        if remaining <= 0:
            within = f" within {timeout:g} s" if timeout > 0 else ""
            raise MpsDaemonError(
                f"the MPS control daemon of {daemon.resource} did not answer on {daemon.pipe_dir}{within} (last "
                f"answer: {last}); check the nvidia-device-plugin-mps-control-daemon pod on this node and that it "
                "shares the MPS root with the plugin")
        if not waiting:
            _log.warning("waiting for the MPS control daemon of %s on %s: %s", daemon.resource, daemon.pipe_dir, last)
            waiting = True
        if stop is not None and stop.wait(min(poll, remaining)):
            raise MpsDaemonError(f"stopped while waiting for the MPS control daemon of {daemon.resource}")
        if stop is None:
            time.sleep(min(poll, remaining))
