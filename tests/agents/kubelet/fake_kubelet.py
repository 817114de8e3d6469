"""A fake kubelet pod-resources service on a real unix socket, for tests of everything that asks it.

`fake_kubelet(pods)` serves `/v1.PodResourcesLister/List` with the generated servicer over gRPC on a unix socket
in a short temporary directory (socket paths are limited to about 100 bytes); `pods` can be replaced while
it runs. `pod(...)` and `container(...)` build the protobuf messages.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from gpu_operator.agents.kubelet import podresources_pb2 as pb
from gpu_operator.agents.kubelet import podresources_pb2_grpc as pb_grpc

__all__ = ["FakeKubelet", "container", "fake_kubelet", "pod"]


def container(name: str, *devices: tuple[str, Sequence[str]]) -> pb.ContainerResources:
    """A container holding (resource name, device IDs) pairs."""
    return pb.ContainerResources(
        name=name,
        devices=[pb.ContainerDevices(resource_name=resource, device_ids=list(ids)) for resource, ids in devices],
    )


def pod(name: str, namespace: str, *containers: pb.ContainerResources) -> pb.PodResources:
    return pb.PodResources(name=name, namespace=namespace, containers=list(containers))


@dataclass
class FakeKubelet(pb_grpc.PodResourcesListerServicer):
    socket_path: str
    pods: list[pb.PodResources] = field(default_factory=list)
    calls: int = 0

    def List(self, request: pb.ListPodResourcesRequest, context: grpc.ServicerContext) -> pb.ListPodResourcesResponse:
        self.calls += 1
        return pb.ListPodResourcesResponse(pod_resources=list(self.pods))


@contextmanager
def fake_kubelet(pods: Sequence[pb.PodResources] = ()) -> Iterator[FakeKubelet]:
    directory = Path(tempfile.mkdtemp(prefix="kubelet-", dir="/tmp"))
    kubelet = FakeKubelet(str(directory / "kubelet.sock"), list(pods))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_PodResourcesListerServicer_to_server(kubelet, server)
    server.add_insecure_port(f"unix://{kubelet.socket_path}")
    server.start()
    try:
        yield kubelet
    finally:
        server.stop(grace=None)
        shutil.rmtree(directory, ignore_errors=True)
