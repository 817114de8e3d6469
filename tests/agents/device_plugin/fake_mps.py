"""An MPS control daemon and its client, as the plugin meets them, for tests without a GPU.

`FakeMpsDaemon` listens on `<root>/<resource>/pipe/control` (a unix socket, loopback by nature) once `start()` is
called, not before, and answers each command the way the real daemon answers the plugin's question (a
percentage) or with an error line. `fake_mps()` writes an executable `nvidia-cuda-mps-control` into a bin
directory: like NVIDIA's client it reads the command on stdin, finds the daemon through
`CUDA_MPS_PIPE_DIRECTORY`, prints the answer, and exits 1 with NVIDIA's message when no daemon listens. Each
call of the client is recorded (its environment's MPS variables and the command) so tests can see the plugin
asking. Everything stops, bounded in time, when the context ends.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tests.agents.device_plugin.harness import TIMEOUT, short_tempdir

__all__ = ["FakeMpsDaemon", "FakeMps", "fake_mps", "CLIENT"]

CLIENT = "nvidia-cuda-mps-control"

_CLIENT_SCRIPT = """#!{python}
import json, os, socket, sys
command = sys.stdin.read()
with open({calls!r}, "a") as calls:
    calls.write(json.dumps({{"pipe": os.environ.get("CUDA_MPS_PIPE_DIRECTORY"),
                             "log": os.environ.get("CUDA_MPS_LOG_DIRECTORY"), "command": command}}) + "\\n")
connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.settimeout(5)
try:
    connection.connect(os.path.join(os.environ["CUDA_MPS_PIPE_DIRECTORY"], "control"))
except OSError:
    print("Cannot find MPS control daemon process")
    sys.exit(1)
with connection:
    connection.sendall(command.encode())
    connection.shutdown(socket.SHUT_WR)
    answer = b""
    while chunk := connection.recv(4096):
        answer += chunk
sys.stdout.write(answer.decode())
sys.exit(0 if answer and not answer.startswith(b"error") else 1)
"""


class FakeMpsDaemon:
    """One resource's control daemon: not listening until `start()`; `stop()` ends it, `start()` again restarts it."""

    def __init__(self, root: str, resource: str, percentage: str = "25.0") -> None:
        self.pipe_dir = os.path.join(root, resource, "pipe")
        self.socket_path = os.path.join(self.pipe_dir, "control")
        self.percentage = percentage
        self.commands: list[str] = []
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Listen (again, after a stop)."""
        self._stop = threading.Event()
        os.makedirs(self.pipe_dir, exist_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.socket_path)
        listener.listen(8)
        listener.settimeout(0.1)
        self._listener = listener
        self._thread = threading.Thread(target=self._serve, name="fake-mps-daemon", daemon=True)
        self._thread.start()

    def _answer(self, command: str) -> str:
        if command.strip() == "get_default_active_thread_percentage":
            return self.percentage + "\n"
        return f"error: unknown command {command.strip()!r}\n"

    def _serve(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with connection:
                connection.settimeout(5)
                received = b""
                while chunk := connection.recv(4096):
                    received += chunk
                command = received.decode()
                self.commands.append(command)
                connection.sendall(self._answer(command).encode())

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(TIMEOUT)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if os.path.lexists(self.socket_path):
            os.unlink(self.socket_path)


@dataclass
class FakeMps:
    """The MPS root (as the plugin's container sees it), the client's bin directory and the daemon."""

    root: str
    bin_dir: str
    daemon: FakeMpsDaemon
    calls_file: str

    def calls(self) -> list[dict[str, str]]:
        """Every call of the client so far."""
        if not os.path.exists(self.calls_file):
            return []
        with open(self.calls_file) as handle:
            return [json.loads(line) for line in handle if line.strip()]


@contextmanager
def fake_mps(resource: str = "nvidia.com/gpu", *, ready: bool = True) -> Iterator[FakeMps]:
    """An MPS root with a client on `bin_dir`; the daemon listens at once when `ready`, else on `daemon.start()`."""
    with short_tempdir() as directory:
        bin_dir = os.path.join(directory, "bin")
        os.makedirs(bin_dir)
        calls = os.path.join(directory, "calls.jsonl")
        client = os.path.join(bin_dir, CLIENT)
        with open(client, "w") as handle:
            handle.write(_CLIENT_SCRIPT.format(python=sys.executable, calls=calls))
        os.chmod(client, os.stat(client).st_mode | stat.S_IXUSR)
        root = os.path.join(directory, "mps")
        daemon = FakeMpsDaemon(root, resource)
        if ready:
            daemon.start()
        fake = FakeMps(root, bin_dir, daemon, calls)
        try:
            yield fake
        finally:
            fake.daemon.stop()
