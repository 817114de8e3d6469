"""One resource's DevicePlugin gRPC server on its own unix socket, and its registration with the kubelet.

Start-up follows NVIDIA's plugin: remove a stale socket, listen on `<dir>/nvidia-<name>.sock`, dial it to make
sure it serves, then call `Register` on `kubelet.sock` (API version `v1beta1`, endpoint = the socket's file
name, options: preferred allocation available, no PreStartContainer). `ListAndWatch` sends the full device list
at once and again after every health change, until the server stops.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent import futures

import grpc

from gpu_operator.agents.device_plugin import deviceplugin_pb2 as pb
from gpu_operator.agents.device_plugin import deviceplugin_pb2_grpc as pb_grpc
from gpu_operator.agents.device_plugin.allocate import AllocationError, ContainerAllocation, allocate
from gpu_operator.agents.device_plugin.devices import Resource
from gpu_operator.agents.device_plugin.preferred import PreferenceError, preferred_allocation
from gpu_operator.agents.device_plugin.settings import Settings

__all__ = ["API_VERSION", "HEALTHY", "UNHEALTHY", "RegistrationError", "ResourceServer", "register"]

_log = logging.getLogger(__name__)

API_VERSION = "v1beta1"
HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
_OPTIONS = pb.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True)
_DIAL_TIMEOUT = 5.0


class RegistrationError(RuntimeError):
    """The kubelet could not be reached or refused the registration."""


def _response(answer: ContainerAllocation) -> pb.ContainerAllocateResponse:
    return pb.ContainerAllocateResponse(
        envs=answer.envs,
        mounts=[pb.Mount(container_path=m.container_path, host_path=m.host_path, read_only=m.read_only)
                for m in answer.mounts],
        devices=[pb.DeviceSpec(container_path=d.container_path, host_path=d.host_path, permissions=d.permissions)
                 for d in answer.devices],
        annotations=answer.annotations,
        cdi_devices=[pb.CDIDevice(name=n) for n in answer.cdi_devices],
    )


class _Servicer(pb_grpc.DevicePluginServicer):
    def __init__(self, owner: ResourceServer) -> None:
        self._owner = owner

    def GetDevicePluginOptions(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.DevicePluginOptions:
        return _OPTIONS

    def ListAndWatch(self, request: pb.Empty, context: grpc.ServicerContext) -> Iterator[pb.ListAndWatchResponse]:
        # a client that goes away wakes the stream at once, so its worker thread is free for the next call
        context.add_callback(self._owner.wake)
        yield from self._owner.watch(context.is_active)

    def GetPreferredAllocation(self, request: pb.PreferredAllocationRequest,
                               context: grpc.ServicerContext) -> pb.PreferredAllocationResponse:
        owner = self._owner
        answers = []
        for container in request.container_requests:
            try:
                ids = preferred_allocation(owner.resource, container.available_deviceIDs,
                                           container.must_include_deviceIDs, container.allocation_size,
                                           owner.settings.allocation_policy)
            except PreferenceError as error:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
            answers.append(pb.ContainerPreferredAllocationResponse(deviceIDs=ids))
        return pb.PreferredAllocationResponse(container_responses=answers)

    def Allocate(self, request: pb.AllocateRequest, context: grpc.ServicerContext) -> pb.AllocateResponse:
        owner = self._owner
        answers = []
        for container in request.container_requests:
            try:
                answers.append(_response(allocate(owner.resource, container.devices_ids, owner.settings)))
            except AllocationError as error:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        return pb.AllocateResponse(container_responses=answers)

    def PreStartContainer(self, request: pb.PreStartContainerRequest,
                          context: grpc.ServicerContext) -> pb.PreStartContainerResponse:
        return pb.PreStartContainerResponse()


def register(kubelet_socket: str, resource_name: str, endpoint: str, timeout: float = _DIAL_TIMEOUT) -> None:
    """Call Registration/Register on the kubelet. Raises RegistrationError."""
    with grpc.insecure_channel(f"unix://{kubelet_socket}") as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
            pb_grpc.RegistrationStub(channel).Register(
                pb.RegisterRequest(version=API_VERSION, endpoint=endpoint, resource_name=resource_name,
                                   options=_OPTIONS),
                timeout=timeout,
            )
        except grpc.FutureTimeoutError as error:
            raise RegistrationError(f"kubelet socket {kubelet_socket} does not answer") from error
        except grpc.RpcError as error:
            raise RegistrationError(f"registration of {resource_name} refused: {error.details()}") from error


class ResourceServer:
    """The DevicePlugin service of one resource. Health changes arrive through `set_unhealthy`."""

    def __init__(self, resource: Resource, settings: Settings, directory: str,
                 unhealthy: frozenset[str] = frozenset()) -> None:
        self.resource = resource
        self.settings = settings
        self.socket = os.path.join(directory, resource.socket_name)
        self._uuids = frozenset(d.uuid for d in resource.devices)
        self._unhealthy = unhealthy & self._uuids
        self._version = 0
        self._stopped = False
        self._changed = threading.Condition()
        self._server: grpc.Server | None = None

    def devices_message(self) -> pb.ListAndWatchResponse:
        devices = []
        for device in self.resource.devices:
            topology = None if device.numa_node is None else pb.TopologyInfo(nodes=[pb.NUMANode(ID=device.numa_node)])
            health = UNHEALTHY if device.uuid in self._unhealthy else HEALTHY
            devices.append(pb.Device(ID=device.id, health=health, topology=topology))
        return pb.ListAndWatchResponse(devices=devices)

    def set_unhealthy(self, uuids: frozenset[str]) -> None:
        mine = uuids & self._uuids
        with self._changed:
            if mine != self._unhealthy:
                self._unhealthy = mine
                self._version += 1
                self._changed.notify_all()

    def wake(self) -> None:
        """Make every stream look at its state again (a client went away)."""
        with self._changed:
            self._changed.notify_all()

    def watch(self, active: Callable[[], bool]) -> Iterator[pb.ListAndWatchResponse]:
        """The stream: the list now, then after each change, until stopped or the client goes away."""
        with self._changed:
            seen = self._version
            message = self.devices_message()
        yield message
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._stopped or self._version != seen or not active())
                if self._stopped or not active():
                    return
                seen = self._version
                message = self.devices_message()
            yield message

    def start(self) -> None:
        """Listen on the socket and check that it answers. Raises OSError / RuntimeError on failure."""
        if os.path.lexists(self.socket):
            os.unlink(self.socket)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix=self.resource.short_name))
        pb_grpc.add_DevicePluginServicer_to_server(_Servicer(self), server)
        if server.add_insecure_port(f"unix://{self.socket}") == 0:
            raise RuntimeError(f"cannot listen on {self.socket}")
        server.start()
        self._server = server
        with grpc.insecure_channel(f"unix://{self.socket}") as channel:
            try:
                grpc.channel_ready_future(channel).result(timeout=_DIAL_TIMEOUT)
            except grpc.FutureTimeoutError as error:
                self.stop()
                raise RuntimeError(f"the plugin server on {self.socket} does not answer") from error

    def register(self, kubelet_socket: str) -> None:
        register(kubelet_socket, self.resource.name, os.path.basename(self.socket))
        _log.info("registered %s (%d devices) on %s", self.resource.name, len(self.resource.devices), self.socket)

    def stop(self) -> None:
        """End the streams, stop serving (bounded: one second of grace) and remove the socket."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        if self._server is not None:
            self._server.stop(grace=1.0).wait(timeout=5.0)
            self._server = None
        if os.path.lexists(self.socket):
            os.unlink(self.socket)
