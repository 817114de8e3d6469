"""The gRPC unary call over h2 against grpcio's own server on a unix socket (the fake kubelet), and servers that
fail: a non-OK status, silence past the deadline, an answer over the size limit, something that is not gRPC.

Upstream: dcgm-exporter makes this call with grpc-go, a fresh connection per collection with a 10 s deadline
(`internal/pkg/transformation/kubernetes.go`, `connectToServer` and `PodMapper.listPods`); the framing and status
rules asserted here are gRPC's HTTP/2 protocol (grpc/doc/PROTOCOL-HTTP2.md).
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest

from gpu_operator.agents.kubelet import PodResourcesClient, PodResourcesError
from gpu_operator.agents.kubelet import podresources_pb2 as pb
from gpu_operator.agents.kubelet import podresources_pb2_grpc as pb_grpc
from gpu_operator.agents.kubelet.grpc_unary import (
    GrpcCallError,
    encode_grpc_timeout,
    frame_message,
    unary_call,
    unframe_message,
)
from gpu_operator.agents.kubelet.pod_resources import LIST_METHOD
from tests.agents.kubelet.fake_kubelet import container, fake_kubelet, pod

GPU = "GPU-879bf707-73f0-4d71-a7ec-cf5c106427d9"


class Refusing(pb_grpc.PodResourcesListerServicer):
    def List(self, request: pb.ListPodResourcesRequest, context: grpc.ServicerContext) -> None:
        context.abort(grpc.StatusCode.PERMISSION_DENIED, "pod-resources: 100% denied, ask the kubelet")


@contextmanager
def grpc_server(servicer: pb_grpc.PodResourcesListerServicer) -> Iterator[str]:
    directory = Path(tempfile.mkdtemp(prefix="grpc-", dir="/tmp"))
    path = str(directory / "kubelet.sock")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    pb_grpc.add_PodResourcesListerServicer_to_server(servicer, server)
    server.add_insecure_port(f"unix://{path}")
    server.start()
    try:
        yield path
    finally:
        server.stop(grace=None)
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def raw_server(reply: bytes) -> Iterator[str]:
    """A unix socket that answers `reply` and hangs up, or with no reply reads what comes and stays silent."""
    directory = Path(tempfile.mkdtemp(prefix="raw-", dir="/tmp"))
    path = str(directory / "kubelet.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)
    listener.settimeout(5)
    done = threading.Event()

    def serve() -> None:
        try:
            peer, _ = listener.accept()
        except OSError:
            return
        with peer:
            peer.settimeout(0.1)
            if reply:
                peer.sendall(reply)
                return
            while not done.is_set():
                try:
                    if not peer.recv(4096):
                        return
                except TimeoutError:
                    continue
                except OSError:
                    return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        done.set()
        listener.close()
        thread.join(timeout=5)
        shutil.rmtree(directory, ignore_errors=True)


def test_the_call_returns_what_grpcio_serves() -> None:
    pods = [pod("trainer", "ml", container("main", ("nvidia.com/gpu", [GPU])))]
    with fake_kubelet(pods) as kubelet:
        answer = unary_call(kubelet.socket_path, LIST_METHOD, b"", timeout=5, max_response=1 << 20)
        again = unary_call(kubelet.socket_path, LIST_METHOD, b"", timeout=5, max_response=1 << 20)
    assert pb.ListPodResourcesResponse.FromString(answer) == pb.ListPodResourcesResponse(pod_resources=pods)
    assert again == answer
    assert kubelet.calls == 2


def test_a_non_ok_status_carries_its_code_and_decoded_message() -> None:
    with grpc_server(Refusing()) as path, pytest.raises(GrpcCallError) as raised:
        unary_call(path, LIST_METHOD, b"", timeout=5, max_response=1 << 20)
    assert raised.value.status == grpc.StatusCode.PERMISSION_DENIED.value[0]
    assert str(raised.value) == "PERMISSION_DENIED: pod-resources: 100% denied, ask the kubelet"


def test_the_client_names_the_status_and_the_socket() -> None:
    with grpc_server(Refusing()) as path, pytest.raises(PodResourcesError) as raised:
        PodResourcesClient(path).list_devices()
    assert f"pod-resources List on {path} failed (PERMISSION_DENIED)" in str(raised.value)


def test_an_unknown_method_is_unimplemented() -> None:
    with fake_kubelet() as kubelet, pytest.raises(GrpcCallError, match="UNIMPLEMENTED") as raised:
        unary_call(kubelet.socket_path, "/v1.PodResourcesLister/Nope", b"", timeout=5, max_response=1 << 20)
    assert raised.value.status == 12


def test_an_answer_over_the_limit_is_refused() -> None:
    ids = [f"{GPU}::{n}" for n in range(2000)]
    with fake_kubelet([pod("big", "default", container("c", ("nvidia.com/gpu", ids)))]) as kubelet:
        with pytest.raises(GrpcCallError, match="larger than the 4096 bytes allowed|more than the 4096"):
            unary_call(kubelet.socket_path, LIST_METHOD, b"", timeout=5, max_response=4096)


def test_a_silent_server_fails_at_the_deadline() -> None:
    with raw_server(b"") as path, pytest.raises(GrpcCallError, match=r"no answer within 0\.3 s") as raised:
        unary_call(path, LIST_METHOD, b"", timeout=0.3, max_response=1 << 20)
    assert raised.value.status == 4


def test_a_server_that_is_not_grpc_is_an_error() -> None:
    with raw_server(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n") as path:
        with pytest.raises(GrpcCallError, match="closed the connection before the answer ended|Connection reset"):
            unary_call(path, LIST_METHOD, b"", timeout=2, max_response=1 << 20)


def test_nobody_listening_is_an_error_naming_the_socket(tmp_path: Path) -> None:
    with pytest.raises(GrpcCallError, match="cannot talk to"):
        unary_call(str(tmp_path / "none.sock"), LIST_METHOD, b"", timeout=1, max_response=1 << 20)


def test_message_framing() -> None:
    assert frame_message(b"ab") == b"\x00\x00\x00\x00\x02ab"
    assert unframe_message(frame_message(b"xyz"), 3) == b"xyz"
    with pytest.raises(GrpcCallError, match="compressed"):
        unframe_message(b"\x01\x00\x00\x00\x00", 10)
    with pytest.raises(GrpcCallError, match="body is 6 bytes for a 2-byte message"):
        unframe_message(b"\x00\x00\x00\x00\x02a", 10)
    with pytest.raises(GrpcCallError, match="no message"):
        unframe_message(b"", 10)


def test_grpc_timeout_header() -> None:
    assert encode_grpc_timeout(10) == "10000m"
    assert encode_grpc_timeout(0.0001) == "1m"
    assert encode_grpc_timeout(10**6) == "1000000S"
