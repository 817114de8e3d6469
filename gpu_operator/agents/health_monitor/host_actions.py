"""What a GPU reset and a reboot do to the node: on a real host through a privileged helper, or simulated.

Detection needs no privilege: NVML through the NVIDIA runtime and the API server, as a non-root user with every
capability dropped. Only the two host actions need the host: `nvidia-smi -r` on the host's device nodes and
`reboot` in the host's root. So the monitor's pod has a second container, privileged, that holds no logic of its
own: it serves exactly these two requests on a unix socket in a volume only the pod shares (:mod:`.host_server`),
running the MIG manager's own host code (:class:`gpu_operator.agents.mig_manager.host.HostActions`: `chroot
/host<driver root> nvidia-smi -r -i <bus ids>`, `chroot /host reboot`). :class:`SocketHost` is the monitor's side.

On a simulated node (`--nvml fake:...`) :class:`SimulatedHost` does what the real ones would look like from outside:
a reset clears the injected faults of the GPUs it reset (or fails, when a `reset-fails` fault says so); a reboot
clears every injected fault and writes a new `status.nodeInfo.bootID` through `nodes/status`, as the kubelet of
a rebooted node does, after which the monitor starts over.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

from gpu_operator.agents.kube import NODES, KubeClient, KubeError, PatchType

__all__ = ["HostOps", "SimulatedHost", "SocketHost", "call_socket"]

#: How long the monitor waits for the helper to answer (a reset of eight GPUs takes tens of seconds).
_ANSWER_SECONDS = 300.0


class HostOps(Protocol):
    """The host actions: each returns None when done, else why it failed."""

    #: Whether a done reboot returns to the caller (simulated) rather than ending the process (a real host).
    returns_from_reboot: bool

    def reset(self, bus_ids: Sequence[str], indices: Sequence[int]) -> str | None: ...

    def reboot(self) -> str | None: ...


def call_socket(path: str, request: dict[str, Any], timeout: float = _ANSWER_SECONDS) -> dict[str, Any]:
    """One request to the host-actions helper, one JSON line each way."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(timeout)
        connection.connect(path)
        connection.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = connection.recv(65536)
            if not chunk:
                break
            data += chunk
    answer = json.loads(data or b"{}")
    return answer if isinstance(answer, dict) else {}


class SocketHost:
    """The real host, through the privileged helper's socket."""

    returns_from_reboot = False

    def __init__(self, path: str) -> None:
        self._path = path

    def _ask(self, request: dict[str, Any]) -> str | None:
        try:
            answer = call_socket(self._path, request)
        except (OSError, ValueError) as error:
            return f"the host-actions helper at {self._path} did not answer: {error}"
        return None if answer.get("ok") else str(answer.get("reason") or "the host-actions helper gave no reason")

    def reset(self, bus_ids: Sequence[str], indices: Sequence[int]) -> str | None:
        return self._ask({"action": "reset", "busIds": list(bus_ids)})

    def reboot(self) -> str | None:
        return self._ask({"action": "reboot"})


class SimulatedHost:
    """A simulated node's host: resets and reboots through the simulated library, the boot through the API."""

    returns_from_reboot = True

    def __init__(self, library: Any, client: KubeClient, node: str) -> None:
        self._library, self._client, self._node = library, client, node

    def reset(self, bus_ids: Sequence[str], indices: Sequence[int]) -> str | None:
        return self._library.reset_gpus(list(indices))

    def reboot(self) -> str | None:
        self._library.reboot()
        patch = {"status": {"nodeInfo": {"bootID": str(uuid.uuid4())}}}
        try:
            self._client.patch(NODES, self._node, patch, patch_type=PatchType.STRATEGIC, status=True)
        except KubeError as error:
            return f"the simulated reboot could not write a new boot id: {error}"
        return None
