"""One gRPC unary call over HTTP/2 on a unix socket, without grpcio.

gRPC over HTTP/2 is a POST to `/<package>.<Service>/<Method>` with `content-type: application/grpc` and
`te: trailers`, whose body is one length-prefixed message (a compressed flag byte, a 4-byte big-endian length,
the serialized message); the answer is `:status 200`, one length-prefixed message in DATA frames, and trailers
carrying `grpc-status` (0 is OK) and an optional percent-encoded `grpc-message`. A server that fails before
answering sends the status in the response headers alone ("trailers-only").

The HTTP/2 framing, flow control and HPACK come from `h2` (python-hyper; the agents image has it already, as
lightkube's HTTP/2 client). This module adds only the gRPC layer. Why not grpcio: the metrics exporter makes one
such call per collection cycle, and importing grpcio (its C core, asyncio and protobuf) costs the exporter more
resident memory than everything else it loads (`tests/bench/test_exporter_memory_bench.py` measures both).

A fresh connection is made for each call, as dcgm-exporter dials the socket on every collection: a kubelet
restart, which recreates the socket, needs no reconnection logic.
"""

from __future__ import annotations

import socket
import struct
import time
import urllib.parse
from collections.abc import Sequence

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

__all__ = [
    "GRPC_STATUS_NAMES",
    "GrpcCallError",
    "encode_grpc_timeout",
    "frame_message",
    "unary_call",
    "unframe_message",
]

#: gRPC status codes by number (grpc/doc/statuscodes.md), for error messages.
GRPC_STATUS_NAMES: dict[int, str] = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND",
    6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
    10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
    15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}

_PREFIX = struct.Struct(">BI")
#: The receive window we offer: big enough that a 16 MiB answer needs few WINDOW_UPDATE round trips.
_WINDOW = 1 << 24
_READ_SIZE = 1 << 16
_USER_AGENT = "gpu-operator-agent grpc-unary/1"


class GrpcCallError(Exception):
    """The call did not produce a message: connection, protocol, size or deadline problem, or a gRPC status."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        #: The gRPC status code the server sent (None when none arrived).
        self.status = status


def frame_message(message: bytes) -> bytes:
    """The length-prefixed, uncompressed form of one gRPC message."""
    return _PREFIX.pack(0, len(message)) + message


def unframe_message(body: bytes, limit: int) -> bytes:
    """The one message of a unary answer's body; GrpcCallError if the body is not exactly one plain message."""
    if len(body) < _PREFIX.size:
        raise GrpcCallError(f"the answer carries no message ({len(body)} bytes of body)")
    compressed, length = _PREFIX.unpack_from(body)
    if compressed:
        raise GrpcCallError("the answer is compressed, but no compression was offered")
    if length > limit:
        raise GrpcCallError(f"the answer's message is {length} bytes, more than the {limit} allowed")
    if len(body) != _PREFIX.size + length:
        raise GrpcCallError(f"the answer's body is {len(body)} bytes for a {length}-byte message")
    return body[_PREFIX.size:]


def encode_grpc_timeout(seconds: float) -> str:
    """`grpc-timeout` as at most 8 digits and a unit: milliseconds, or seconds when that does not fit."""
    milliseconds = max(1, round(seconds * 1000))
    return f"{milliseconds}m" if milliseconds < 10**8 else f"{min(round(seconds), 10**8 - 1)}S"


def _status_of(headers: Sequence[tuple[str, str]]) -> tuple[int | None, str]:
    values = dict(headers)
    raw = values.get("grpc-status")
    try:
        status = None if raw is None else int(raw)
    except ValueError:
        raise GrpcCallError(f"the server sent a grpc-status that is not a number: {raw!r}") from None
    return status, urllib.parse.unquote(values.get("grpc-message", ""))


class _Call:
    """The state of one call on one connection."""

    def __init__(self, sock: socket.socket, deadline: float, limit: int) -> None:
        self.sock = sock
        self.deadline = deadline
        self.limit = limit
        self.connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True,
                                                                               header_encoding="utf-8"))
        self.body = bytearray()
        self.headers: list[tuple[str, str]] = []
        self.trailers: list[tuple[str, str]] = []
        self.ended = False

    def flush(self) -> None:
        data = self.connection.data_to_send()
        if data:
            self._settimeout()
            self.sock.sendall(data)

    def _settimeout(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self.sock.settimeout(left)

    def start(self, path: str, request: bytes, timeout: float) -> int:
        connection = self.connection
        connection.initiate_connection()
        connection.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: _WINDOW,
                                    h2.settings.SettingCodes.ENABLE_PUSH: 0})
        connection.increment_flow_control_window(_WINDOW - connection.inbound_flow_control_window)
        stream = connection.get_next_available_stream_id()
        connection.send_headers(stream, [
            (":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "localhost"),
            ("content-type", "application/grpc"), ("te", "trailers"), ("user-agent", _USER_AGENT),
            ("grpc-timeout", encode_grpc_timeout(timeout)),
        ])
        connection.send_data(stream, frame_message(request), end_stream=True)
        self.flush()
        return stream

    def receive(self, stream: int) -> None:
        while not self.ended:
            self._settimeout()
            data = self.sock.recv(_READ_SIZE)
            if not data:
                raise GrpcCallError("the server closed the connection before the answer ended")
            for event in self.connection.receive_data(data):
                self._handle(event, stream)
            self.flush()

    def _handle(self, event: h2.events.Event, stream: int) -> None:
        if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
            self.headers = [(str(k), str(v)) for k, v in event.headers or ()]
        elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream:
            self.body += event.data or b""
            if len(self.body) > self.limit + _PREFIX.size:
                raise GrpcCallError(f"the answer is larger than the {self.limit} bytes allowed")
            self.connection.acknowledge_received_data(event.flow_controlled_length or 0, stream)
        elif isinstance(event, h2.events.TrailersReceived) and event.stream_id == stream:
            self.trailers = [(str(k), str(v)) for k, v in event.headers or ()]
        elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
            self.ended = True
        elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
            raise GrpcCallError(f"the server reset the stream (HTTP/2 error code {event.error_code})")
        elif isinstance(event, h2.events.ConnectionTerminated):
            raise GrpcCallError(f"the server ended the connection (GOAWAY, HTTP/2 error code {event.error_code})")

    def result(self) -> bytes:
        values = dict(self.headers)
        status_code = values.get(":status")
        status, message = _status_of(self.trailers or self.headers)
        if status_code != "200":
            raise GrpcCallError(f"the server answered HTTP status {status_code}, not a gRPC answer", status)
        if not values.get("content-type", "").startswith("application/grpc"):
            raise GrpcCallError(f"the server answered content-type {values.get('content-type')!r}, not gRPC")
        if status is None:
            raise GrpcCallError("the answer ended without a grpc-status")
        if status != 0:
            name = GRPC_STATUS_NAMES.get(status, str(status))
            raise GrpcCallError(f"{name}: {message}" if message else name, status)
        return unframe_message(bytes(self.body), self.limit)


def unary_call(socket_path: str, method: str, request: bytes, *, timeout: float, max_response: int) -> bytes:
    """Call `method` (`/<package>.<Service>/<Method>`) with the serialized `request` on the gRPC server listening
    on `socket_path`; returns the serialized answer. Raises GrpcCallError (with `status` when the server sent one)
    for anything else: no server, a deadline passed, a non-OK status, an answer over `max_response` bytes."""
    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(socket_path)
        call = _Call(sock, deadline, max_response)
        stream = call.start(method, request, timeout)
        call.receive(stream)
        return call.result()
    except TimeoutError:
        raise GrpcCallError(f"no answer within {timeout:g} s", 4) from None
    except h2.exceptions.ProtocolError as error:
        raise GrpcCallError(f"HTTP/2 protocol error: {error}") from error
    except OSError as error:
        raise GrpcCallError(f"cannot talk to {socket_path}: {error}") from error
    finally:
        sock.close()
