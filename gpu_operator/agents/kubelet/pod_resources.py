"""Which container holds which devices: a client of the kubelet's pod-resources `List` call.

The kubelet serves `v1.PodResourcesLister` on a unix socket (by default
`/var/lib/kubelet/pod-resources/kubelet.sock`; the exporter's DaemonSet mounts that directory read-only). One
`List` call returns every running pod with, per container, the device IDs the device plugins handed out,
grouped by resource name (`nvidia.com/gpu` with GPU UUIDs or `<UUID>::<replica>` under time-slicing,
`nvidia.com/mig-1g.10gb` with MIG device UUIDs, ...). The answer is flattened to one
:class:`AllocatedDevices` per (pod, container, resource).

A missing socket is not an error - the node simply has no kubelet API to ask (or it is not mounted), and the
caller leaves its series without pod labels, as dcgm-exporter does. A failing call raises
:class:`PodResourcesError`. Each call dials the socket afresh, as dcgm-exporter does every collection, so a
kubelet restart (which recreates the socket at the same path) needs nothing from us.

The call is real gRPC over HTTP/2 (:mod:`.grpc_unary`) and the answer is read straight from the protobuf wire
format (:mod:`.wire`): the exporter, the only caller, loads neither grpcio nor the protobuf runtime, which would
otherwise be most of its resident memory (`tests/bench/test_exporter_memory_bench.py`).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Protocol

from gpu_operator.agents.kubelet.grpc_unary import GRPC_STATUS_NAMES, GrpcCallError, unary_call
from gpu_operator.agents.kubelet.wire import WireError, pod_resources

__all__ = [
    "DEFAULT_POD_RESOURCES_SOCKET",
    "DEFAULT_TIMEOUT",
    "LIST_METHOD",
    "MAX_RESPONSE_BYTES",
    "AllocatedDevices",
    "PodResourcesClient",
    "PodResourcesError",
    "PodResourcesSource",
]

DEFAULT_POD_RESOURCES_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
#: Seconds one List call may take.
DEFAULT_TIMEOUT = 10.0
#: Dense MIG nodes answer with more than gRPC's default 4 MiB; dcgm-exporter allows 16 MiB.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
#: The gRPC method: package `v1`, service `PodResourcesLister`, method `List`.
LIST_METHOD = "/v1.PodResourcesLister/List"
#: A serialized `ListPodResourcesRequest`: the message has no fields.
_EMPTY_REQUEST = b""


class PodResourcesError(Exception):
    """The kubelet's pod-resources service could not be asked (bad socket, call failed or timed out)."""


@dataclass(frozen=True, slots=True)
class AllocatedDevices:
    """The devices of one resource that one container of one pod holds, as the device plugin named them."""

    pod: str
    namespace: str
    container: str
    resource_name: str
    device_ids: tuple[str, ...]


class PodResourcesSource(Protocol):
    """Where device allocations come from; None means "no kubelet to ask" (leave series unlabelled)."""

    def list_devices(self) -> tuple[AllocatedDevices, ...] | None: ...


def _is_socket(path: str) -> bool:
    """True for a unix socket; False when nothing is there; PodResourcesError for anything else."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as error:
        raise PodResourcesError(f"cannot inspect pod-resources socket {path}: {error}") from error
    if not stat.S_ISSOCK(mode):
        raise PodResourcesError(f"pod-resources kubelet socket path {path!r} must be a Unix socket")
    return True


class PodResourcesClient:
    """`List` over the kubelet's unix socket; thread-safe (each call has its own connection)."""

    def __init__(self, socket_path: str = DEFAULT_POD_RESOURCES_SOCKET, timeout: float = DEFAULT_TIMEOUT) -> None:
        if not os.path.isabs(socket_path):
            raise PodResourcesError(f"pod-resources kubelet socket path {socket_path!r} must be absolute")
        self._path = socket_path
        self._timeout = timeout

    @property
    def socket_path(self) -> str:
        return self._path

    def list_devices(self) -> tuple[AllocatedDevices, ...] | None:
        """Every device allocation on the node, or None when the kubelet socket is absent."""
        if not _is_socket(self._path):
            return None
        try:
            answer = unary_call(self._path, LIST_METHOD, _EMPTY_REQUEST, timeout=self._timeout,
                                max_response=MAX_RESPONSE_BYTES)
        except GrpcCallError as error:
            code = None if error.status is None else GRPC_STATUS_NAMES.get(error.status, str(error.status))
            raise PodResourcesError(f"pod-resources List on {self._path} failed ({code}): {error}") from error
        try:
            return tuple(AllocatedDevices(*group) for group in pod_resources(answer))
        except WireError as error:
            raise PodResourcesError(f"pod-resources List on {self._path}: malformed answer: {error}") from error

    def close(self) -> None:
        """Nothing is held between calls; kept so callers can release any source the same way."""
