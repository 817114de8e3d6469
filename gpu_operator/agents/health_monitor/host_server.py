"""The host-actions helper: the privileged container that resets GPUs and reboots the node when the monitor asks.

It listens on a unix socket in a volume only its pod mounts and serves one request per connection, one JSON line
each way: `{"action": "reset", "busIds": ["00000000:17:00.0", ...]}` or `{"action": "reboot"}`, answered
`{"ok": true}` or `{"ok": false, "reason": "..."}`. Bus ids must be PCI addresses (no other argument reaches a
command line). It reads the driver root from the validator's `driver-ready` for each request (the driver
container's `/run/nvidia/driver`, or the host's own `/`), and runs the MIG manager's host code in the host's root,
mounted at `/host`. It holds no Kubernetes credentials and keeps no state.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socketserver
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpu_operator.agents.device_plugin.driver_ready import read_driver_ready
from gpu_operator.agents.mig_manager.hardware import MigHardwareError
from gpu_operator.agents.mig_manager.host import HostActions

__all__ = ["HostActionServer", "handle_request"]

_log = logging.getLogger(__name__)
_BUS_ID = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]")
_REQUEST_LIMIT = 65536


def _driver_root(validations_dir: str) -> str:
    ready = Path(validations_dir) / "driver-ready"
    try:
        return read_driver_ready(str(ready)).get("NVIDIA_DRIVER_ROOT") or "/"
    except OSError:
        return "/"


def handle_request(request: Any, host: HostActions) -> dict[str, Any]:
    """The answer to one request (pure but for the host actions)."""
    if not isinstance(request, dict):
        return {"ok": False, "reason": "a request is a JSON object"}
    action = request.get("action")
    if action == "reset":
        bus_ids = request.get("busIds")
        if not isinstance(bus_ids, list) or not bus_ids or not all(
                isinstance(b, str) and _BUS_ID.fullmatch(b) for b in bus_ids):
            return {"ok": False, "reason": f"busIds must be PCI bus ids, got {bus_ids!r}"}
        failure = host.reset_gpus(list(bus_ids))
        return {"ok": failure is None, **({"reason": failure} if failure else {})}
    if action == "reboot":
        try:
            host.reboot()
        except MigHardwareError as error:
            return {"ok": False, "reason": str(error)}
        return {"ok": True}
    return {"ok": False, "reason": f"unknown action {action!r}: reset or reboot"}


class HostActionServer(socketserver.UnixStreamServer):
    """Serves the socket at `path` until shut down; `host_for` gives the host actions for each request."""

    def __init__(self, path: str, host_for: Callable[[], HostActions]) -> None:
        if os.path.exists(path):
            os.unlink(path)
        server = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                line = self.rfile.readline(_REQUEST_LIMIT)
                try:
                    request = json.loads(line)
                except ValueError:
                    answer: dict[str, Any] = {"ok": False, "reason": "the request is not JSON"}
                else:
                    _log.info("host action requested: %s", request)
                    answer = handle_request(request, server.host_for())
                self.wfile.write(json.dumps(answer).encode() + b"\n")

        super().__init__(path, Handler)
        self.host_for = host_for
        os.chmod(path, 0o666)  # the monitor runs as another user; only this pod mounts the directory


def host_actions(validations_dir: str, host_root: str = "/host") -> HostActions:
    """The MIG manager's host actions with the driver root `driver-ready` names now."""
    return HostActions(_driver_root(validations_dir), host_root)
