"""A fake kubelet (the Registration service on a real unix socket), a plugin client, and an NVML with injectable events.

`registration_server(directory)` serves `/v1beta1.Registration/Register` on `<directory>/kubelet.sock` and
queues every registration; `stop()` ends it and removes the socket, `restart()` recreates it (as a restarted
kubelet does). `PluginClient` talks to a plugin socket as the kubelet does, with `ListAndWatch` read by a thread
into a queue so that every read is bounded in time. `InjectableNvml` is a simulated node whose event wait
returns the events a test puts in.
"""

from __future__ import annotations

import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager

import grpc

from gpu_operator.agents.device_plugin import deviceplugin_pb2 as pb
from gpu_operator.agents.device_plugin import deviceplugin_pb2_grpc as pb_grpc
from gpu_operator.agents.nvml import DeviceEvent, EventKind, GpuInfo, GpuSample, Nvml, NvmlError, SystemInfo, open_nvml

__all__ = ["FakeKubelet", "PluginClient", "InjectableNvml", "short_tempdir", "xid", "TIMEOUT"]

#: The bound on every wait in these tests (seconds).
TIMEOUT = 10.0


@contextmanager
def short_tempdir() -> Iterator[str]:
    """A directory with a short path (unix socket paths are limited to about 100 bytes)."""
    directory = tempfile.mkdtemp(prefix="dp-", dir="/tmp")
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class FakeKubelet(pb_grpc.RegistrationServicer):
    """The kubelet's Registration service; `registrations` receives every RegisterRequest."""

    def __init__(self, directory: str) -> None:
        self.socket = os.path.join(directory, "kubelet.sock")
        self.registrations: queue.Queue[pb.RegisterRequest] = queue.Queue()
        self._server: grpc.Server | None = None

    def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:
        self.registrations.put(request)
        return pb.Empty()

    def start(self) -> None:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        pb_grpc.add_RegistrationServicer_to_server(self, server)
        server.add_insecure_port(f"unix://{self.socket}")
        server.start()
        self._server = server

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait(TIMEOUT)
            self._server = None
        if os.path.lexists(self.socket):
            os.unlink(self.socket)

    def restart(self) -> None:
        self.stop()
        self.start()

    def next_registration(self) -> pb.RegisterRequest:
        return self.registrations.get(timeout=TIMEOUT)

    def registered(self, count: int) -> dict[str, pb.RegisterRequest]:
        """The next `count` registrations by resource name."""
        requests = [self.next_registration() for _ in range(count)]
        return {r.resource_name: r for r in requests}


class PluginClient:
    """The kubelet's side of one plugin socket."""

    def __init__(self, socket: str) -> None:
        self.channel = grpc.insecure_channel(f"unix://{socket}")
        grpc.channel_ready_future(self.channel).result(timeout=TIMEOUT)
        self.stub = pb_grpc.DevicePluginStub(self.channel)
        self.updates: queue.Queue[pb.ListAndWatchResponse | None] = queue.Queue()
        self._stream: grpc.Future | None = None
        self._reader: threading.Thread | None = None

    def watch(self) -> pb.ListAndWatchResponse:
        """Open ListAndWatch; returns the first list."""
        stream = self.stub.ListAndWatch(pb.Empty())
        self._stream = stream

        def read() -> None:
            try:
                for message in stream:
                    self.updates.put(message)
            except grpc.RpcError:
                pass
            self.updates.put(None)

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        return self.next_update()

    def next_update(self, timeout: float = TIMEOUT) -> pb.ListAndWatchResponse:
        message = self.updates.get(timeout=timeout)
        assert message is not None, "the ListAndWatch stream ended"
        return message

    def allocate(self, *containers: list[str]) -> pb.AllocateResponse:
        requests = [pb.ContainerAllocateRequest(devices_ids=c) for c in containers]
        request = pb.AllocateRequest(container_requests=requests)
        return self.stub.Allocate(request, timeout=TIMEOUT)

    def preferred(self, available: list[str], must: list[str], size: int) -> list[str]:
        request = pb.PreferredAllocationRequest(container_requests=[pb.ContainerPreferredAllocationRequest(
            available_deviceIDs=available, must_include_deviceIDs=must, allocation_size=size)])
        return list(self.stub.GetPreferredAllocation(request, timeout=TIMEOUT).container_responses[0].deviceIDs)

    def close(self) -> None:
        if self._stream is not None:
            self._stream.cancel()
        self.channel.close()
        if self._reader is not None:
            self._reader.join(TIMEOUT)


def xid(gpu: GpuInfo, number: int, gpu_instance: int | None = None, compute_instance: int | None = None) -> DeviceEvent:
    return DeviceEvent(EventKind.XID, 8, number, gpu.uuid, gpu.index, gpu_instance, compute_instance)


class InjectableNvml:
    """A simulated node (`fake:<profile>`) whose `wait_event` returns the injected events and whose
    `watch_events` answers `unwatched`."""

    def __init__(self, profile: str) -> None:
        self._inner: Nvml = open_nvml(f"fake:{profile}")
        self.events: queue.Queue[DeviceEvent] = queue.Queue()
        self.unwatched: dict[str, NvmlError] = {}
        self.pci = self._inner.pci

    def system(self) -> SystemInfo:
        return self._inner.system()

    def devices(self) -> tuple[GpuInfo, ...]:
        return self._inner.devices()

    def sample(self) -> tuple[GpuSample, ...]:
        return self._inner.sample()

    def inject(self, event: DeviceEvent) -> None:
        self.events.put(event)

    def wait_event(self, timeout_ms: int) -> DeviceEvent | None:
        try:
            return self.events.get(timeout=timeout_ms / 1000)
        except queue.Empty:
            return None

    def watch_events(self) -> dict[str, NvmlError]:
        return self.unwatched

    def close(self) -> None:
        self._inner.close()
