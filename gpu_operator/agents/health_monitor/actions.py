"""Acting on the controller's requests: reset GPUs or reboot the node, once per request.

A reset (`reset-request` = `<id>:<uuid>,...`, :mod:`.requests`):

1. `reset-started: <id>` is written first, so a monitor that restarts half-way answers `failed:interrupted`
   instead of resetting again;
2. the GPUs must be this node's (else `failed:`); a MIG device stands for its GPU;
3. the monitor waits, up to `--reset-idle-timeout-seconds`, until no compute process runs on them (the controller
   drained their pods and paused the GPU operands; `nvidia-smi -r` refuses a GPU in use);
4. it lets go of NVML (a reset waits for every NVML client of the GPU), resets them on the host, opens NVML again;
5. it reads their health again: a GPU lost, or still showing a fault that quarantines (a double-bit ECC error, a
   pending row remap, a recovery action), fails the reset with what it read;
6. on success the XID findings of those GPUs are cleared (a reset fixed them) and the answer is `<id>:success`.

A reboot (`reboot-request` = `<id>`) writes `<id>:rebooting` and reboots the host as the MIG manager does with
`WITH_REBOOT` (`chroot /host reboot`); the controller sees the new `status.nodeInfo.bootID`. While the host goes
down the monitor reads nothing (a driver unloading is no fault). A simulated node returns from its reboot and the
monitor starts over, as a new pod on a rebooted node would.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from gpu_operator.agents.health_monitor.findings import Finding
from gpu_operator.agents.health_monitor.host_actions import HostOps
from gpu_operator.agents.health_monitor.node_view import NodeView
from gpu_operator.agents.health_monitor.requests import (
    REBOOT_REQUEST,
    REBOOT_RESULT,
    REBOOTING,
    RESET_REQUEST,
    RESET_RESULT,
    RESET_STARTED,
    RequestError,
    ResetRequest,
    answered,
    failed,
    parse_reboot_request,
    parse_reset_request,
    succeeded,
)
from gpu_operator.agents.kube import NODES, KubeClient, KubeError
from gpu_operator.agents.nvml import GpuInfo, NvmlError

__all__ = ["Agent", "RequestHandler"]

_log = logging.getLogger(__name__)
_NO_HELPER = "this node's health monitor runs without its host-actions helper (no resets or reboots here)"


def _by_uuid(gpus: Sequence[GpuInfo]) -> dict[str, GpuInfo]:
    """Each GPU by its UUID and by the UUIDs of its MIG devices (a reset is of the whole GPU)."""
    found: dict[str, GpuInfo] = {}
    for gpu in gpus:
        if gpu.uuid:
            found[gpu.uuid] = gpu
        found.update({m.uuid: gpu for m in gpu.mig_devices if m.uuid})
    return found


class Agent(Protocol):
    """What the request handler needs from the monitor."""

    def gpus(self) -> Sequence[GpuInfo]: ...

    def processes(self, indices: Sequence[int]) -> Mapping[int, Sequence[int]]: ...

    def nvml_released(self) -> AbstractContextManager[None]: ...

    def recheck(self, gpus: Sequence[GpuInfo]) -> list[Finding]: ...

    def reset_done(self, uuids: Sequence[str], request_id: str) -> None: ...

    def start_over(self) -> None: ...

    def rebooting(self) -> None: ...


class RequestHandler:
    """Acts on the requests its Node's annotations hold; `handle()` after every change of the Node."""

    def __init__(self, client: KubeClient, node: str, view: NodeView, agent: Agent,
                 host: Callable[[], HostOps | None], *, idle_timeout: float, idle_poll: float,
                 sleep: Callable[[float], None] = time.sleep, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._client, self._node, self._view, self._agent, self._host = client, node, view, agent, host
        self._idle_timeout, self._idle_poll = idle_timeout, idle_poll
        self._sleep, self._monotonic = sleep, monotonic

    def _answer(self, annotation: str, value: str) -> None:
        node = self._client.patch(NODES, self._node, {"metadata": {"annotations": {annotation: value}}})
        self._view.offer(node)
        _log.info("node %s: %s=%s", self._node, annotation, value)

    def handle(self) -> None:
        """Act on the reset and reboot requests not answered yet (a failed write is tried at the next change)."""
        try:
            self._reset_requested()
            self._reboot_requested()
        except KubeError as error:
            _log.warning("node %s: a request's answer was not written (%s); trying again", self._node, error)

    # -- resets -------------------------------------------------------------------------------------------------

    def _reset_requested(self) -> None:
        annotations = self._view.annotations()
        text = annotations.get(RESET_REQUEST)
        if not text:
            return
        try:
            request = parse_reset_request(text)
        except RequestError as error:
            if error.request_id and answered(annotations, RESET_RESULT, error.request_id) is None:
                self._answer(RESET_RESULT, failed(error.request_id, str(error)))
            return
        if answered(annotations, RESET_RESULT, request.request_id) is not None:
            return
        if annotations.get(RESET_STARTED) == request.request_id:
            self._answer(RESET_RESULT, failed(request.request_id, "interrupted: the health monitor restarted during "
                                              "the reset; it is not tried again"))
            return
        self._answer(RESET_STARTED, request.request_id)
        outcome = self._reset(request)
        self._answer(RESET_RESULT, succeeded(request.request_id) if outcome is None
                     else failed(request.request_id, outcome))

    def _reset(self, request: ResetRequest) -> str | None:
        """None when the GPUs were reset and read healthy, else why not."""
        host = self._host()
        if host is None:
            return _NO_HELPER
        try:
            known = _by_uuid(self._agent.gpus())
        except NvmlError as error:
            return f"NVML cannot list the GPUs: {error}"
        unknown = [u for u in request.uuids if u not in known]
        if unknown:
            return f"no GPU {', '.join(unknown)} on node {self._node}"
        gpus = list({known[u].index: known[u] for u in request.uuids}.values())
        busy = self._wait_idle(gpus)
        if busy:
            return busy
        bus_ids = [g.pci.bus_id for g in gpus if g.pci is not None]
        with self._agent.nvml_released():
            failure = host.reset(bus_ids, [g.index for g in gpus])
        if failure:
            return failure
        uuids = [g.uuid for g in gpus if g.uuid]
        try:
            refreshed = {g.index: g for g in self._agent.gpus()}
            remaining = self._agent.recheck([refreshed.get(g.index, g) for g in gpus])
        except NvmlError as error:
            return f"NVML cannot read the GPUs after the reset: {error}"
        if remaining:
            return "still faulty after the reset: " + "; ".join(f.entry for f in remaining)
        self._agent.reset_done(uuids, request.request_id)
        return None

    def _wait_idle(self, gpus: Sequence[GpuInfo]) -> str | None:
        deadline = self._monotonic() + self._idle_timeout
        while True:
            try:
                running = {i: pids for i, pids in self._agent.processes([g.index for g in gpus]).items() if pids}
            except NvmlError as error:
                return f"NVML cannot list the GPUs' processes: {error}"
            if not running:
                return None
            if self._monotonic() >= deadline:
                names = {g.index: g.uuid for g in gpus}
                held = "; ".join(f"{names[i]} by pids {', '.join(map(str, pids))}"
                                 for i, pids in sorted(running.items()))
                return f"GPUs still in use after {self._idle_timeout:g} s: {held}"
            self._sleep(self._idle_poll)

    # -- reboots ------------------------------------------------------------------------------------------------

    def _reboot_requested(self) -> None:
        annotations = self._view.annotations()
        text = annotations.get(REBOOT_REQUEST)
        if not text:
            return
        try:
            request_id = parse_reboot_request(text)
        except RequestError as error:
            _log.warning("node %s: %s", self._node, error)
            return
        if answered(annotations, REBOOT_RESULT, request_id) is not None:
            return
        host = self._host()
        if host is None:
            self._answer(REBOOT_RESULT, failed(request_id, _NO_HELPER))
            return
        self._answer(REBOOT_RESULT, f"{request_id}:{REBOOTING}")
        failure = host.reboot()
        if failure:
            self._answer(REBOOT_RESULT, failed(request_id, failure))
        elif host.returns_from_reboot:
            self._agent.start_over()
        else:
            self._agent.rebooting()

