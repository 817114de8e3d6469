"""The pod-resources clients the exporter memory benchmark compares with the one the exporter ships.

* :class:`GrpcioPodResourcesClient` is the exporter's client before the benchmark: a grpcio channel kept for the
  client's lifetime and the generated `PodResourcesListerStub`, answers read into protobuf messages. Loading it
  brings grpcio (its C core and asyncio) and the protobuf runtime into the process.
* :class:`H2ProtobufPodResourcesClient` makes the shipped HTTP/2 call (`grpc_unary`) but reads the answer with
  the generated protobuf message, which loads the protobuf runtime and nothing of grpcio: it tells apart what
  each of the two libraries costs.

Both return what the shipped :class:`~gpu_operator.agents.kubelet.PodResourcesClient` returns, so the exporter
runs unchanged with either.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from gpu_operator.agents.kubelet import AllocatedDevices, PodResourcesClient, PodResourcesError
from gpu_operator.agents.kubelet import podresources_pb2 as pb
from gpu_operator.agents.kubelet.grpc_unary import GrpcCallError, unary_call
from gpu_operator.agents.kubelet.pod_resources import LIST_METHOD, MAX_RESPONSE_BYTES, _is_socket

if TYPE_CHECKING:
    import grpc

    from gpu_operator.agents.kubelet import podresources_pb2_grpc as pb_grpc

__all__ = ["GrpcioPodResourcesClient", "H2ProtobufPodResourcesClient", "flatten"]


def flatten(response: pb.ListPodResourcesResponse) -> tuple[AllocatedDevices, ...]:
    """One entry per (pod, container, resource) of a protobuf answer, in the kubelet's order."""
    return tuple(
        AllocatedDevices(p.name, p.namespace, c.name, d.resource_name, tuple(d.device_ids))
        for p in response.pod_resources
        for c in p.containers
        for d in c.devices
    )


class GrpcioPodResourcesClient(PodResourcesClient):
    """List through a grpcio channel held between calls (the exporter's client before this benchmark). grpcio is
    imported when the client is made, so choosing the other baseline never loads it."""

    def __init__(self, socket_path: str, timeout: float = 10.0) -> None:
        super().__init__(socket_path, timeout)
        import grpc

        from gpu_operator.agents.kubelet import podresources_pb2_grpc

        self._grpc: Any = grpc
        self._pb_grpc: Any = podresources_pb2_grpc
        self._channel: grpc.Channel | None = None
        self._stub: pb_grpc.PodResourcesListerStub | None = None
        self._lock = threading.Lock()

    def _lister(self) -> pb_grpc.PodResourcesListerStub:
        with self._lock:
            if self._stub is None:
                options = [("grpc.max_receive_message_length", MAX_RESPONSE_BYTES)]
                self._channel = self._grpc.insecure_channel(f"unix://{self.socket_path}", options=options)
                self._stub = self._pb_grpc.PodResourcesListerStub(self._channel)
            return self._stub

    def list_devices(self) -> tuple[AllocatedDevices, ...] | None:
        if not _is_socket(self.socket_path):
            return None
        try:
            response = self._lister().List(pb.ListPodResourcesRequest(), timeout=self._timeout)
        except self._grpc.RpcError as error:
            raise PodResourcesError(f"pod-resources List on {self.socket_path} failed: {error}") from error
        return flatten(response)

    def close(self) -> None:
        with self._lock:
            if self._channel is not None:
                self._channel.close()
            self._channel = self._stub = None


class H2ProtobufPodResourcesClient(PodResourcesClient):
    """The shipped HTTP/2 call, the answer read by the generated protobuf message."""

    def list_devices(self) -> tuple[AllocatedDevices, ...] | None:
        if not _is_socket(self.socket_path):
            return None
        try:
            answer = unary_call(self.socket_path, LIST_METHOD, b"", timeout=self._timeout,
                                max_response=MAX_RESPONSE_BYTES)
        except GrpcCallError as error:
            raise PodResourcesError(f"pod-resources List on {self.socket_path} failed: {error}") from error
        return flatten(pb.ListPodResourcesResponse.FromString(answer))
