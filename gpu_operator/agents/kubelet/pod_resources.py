"""Which container holds which devices: a client of the kubelet's pod-resources `List` call.

The kubelet serves `v1.PodResourcesLister` on a unix socket (by default
`/var/lib/kubelet/pod-resources/kubelet.sock`; the exporter's DaemonSet mounts that directory read-only). One
`List` call returns every running pod with, per container, the device IDs the device plugins handed out,
grouped by resource name (`nvidia.com/gpu` with GPU UUIDs or `<UUID>::<replica>` under time-slicing,
`nvidia.com/mig-1g.10gb` with MIG device UUIDs, ...). The answer is flattened to one
:class:`AllocatedDevices` per (pod, container, resource).

A missing socket is not an error - the node simply has no kubelet API to ask (or it is not mounted), and the
caller leaves its series without pod labels, as dcgm-exporter does. A failing call raises
:class:`PodResourcesError`. The gRPC channel is kept between calls and reconnects by itself after a kubelet
restart, which recreates the socket at the same path.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from typing import Protocol

import grpc

from gpu_operator.agents.kubelet import podresources_pb2, podresources_pb2_grpc

__all__ = [
    "DEFAULT_POD_RESOURCES_SOCKET",
    "DEFAULT_TIMEOUT",
    "MAX_RESPONSE_BYTES",
    "AllocatedDevices",
    "PodResourcesClient",
    "PodResourcesError",
    "PodResourcesSource",
    "flatten",
]

DEFAULT_POD_RESOURCES_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
#: Seconds one List call may take.
DEFAULT_TIMEOUT = 10.0
#: Dense MIG nodes answer with more than gRPC's default 4 MiB; dcgm-exporter allows 16 MiB.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024


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


def flatten(response: podresources_pb2.ListPodResourcesResponse) -> tuple[AllocatedDevices, ...]:
    """One entry per (pod, container, resource), in the kubelet's order."""
    return tuple(
        AllocatedDevices(pod.name, pod.namespace, container.name, devices.resource_name, tuple(devices.device_ids))
        for pod in response.pod_resources
        for container in pod.containers
        for devices in container.devices
    )


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
    """`List` over the kubelet's unix socket; thread-safe, one channel for the client's lifetime."""

    def __init__(self, socket_path: str = DEFAULT_POD_RESOURCES_SOCKET, timeout: float = DEFAULT_TIMEOUT) -> None:
        if not os.path.isabs(socket_path):
            raise PodResourcesError(f"pod-resources kubelet socket path {socket_path!r} must be absolute")
        self._path = socket_path
        self._timeout = timeout
        self._channel: grpc.Channel | None = None
        self._stub: podresources_pb2_grpc.PodResourcesListerStub | None = None
        self._lock = threading.Lock()

    @property
    def socket_path(self) -> str:
        return self._path

    def _lister(self) -> podresources_pb2_grpc.PodResourcesListerStub:
        with self._lock:
            if self._stub is None:
                options = [("grpc.max_receive_message_length", MAX_RESPONSE_BYTES)]
                self._channel = grpc.insecure_channel(f"unix://{self._path}", options=options)
                self._stub = podresources_pb2_grpc.PodResourcesListerStub(self._channel)
            return self._stub

    def list_devices(self) -> tuple[AllocatedDevices, ...] | None:
        """Every device allocation on the node, or None when the kubelet socket is absent."""
        if not _is_socket(self._path):
            return None
        request = podresources_pb2.ListPodResourcesRequest()
        try:
            response = self._lister().List(request, timeout=self._timeout)
        except grpc.RpcError as error:
            code = error.code() if isinstance(error, grpc.Call) else None
            detail = error.details() if isinstance(error, grpc.Call) else str(error)
            raise PodResourcesError(f"pod-resources List on {self._path} failed ({code}): {detail}") from error
        return flatten(response)

    def close(self) -> None:
        with self._lock:
            if self._channel is not None:
                self._channel.close()
            self._channel = None
            self._stub = None
