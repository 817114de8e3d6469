"""A small threaded HTTP server for an exporter's endpoints (`/metrics`, `/health`, a landing page).

Each route is a function returning a complete :class:`Response`; for `/metrics` that is the pre-rendered body
of the latest snapshot, so serving a scrape is a dictionary lookup and one socket write. Connections are kept
alive (HTTP/1.1, as Prometheus scrapes), each on its own daemon thread; the response goes out in a single write
with Nagle's algorithm off, so a scrape is never held back by delayed ACKs. An empty host listens on every
interface, IPv6 and IPv4 where the node has both.

The request side is read here on `socketserver` rather than through `http.server`: a scrape needs only the
request line and the end of the headers, and `http.server` loads `http.client`, `email` and `ssl` (about 6 MiB
resident in every agent; `tests/bench/test_exporter_memory_bench.py`).
"""

from __future__ import annotations

import logging
import socket
import socketserver
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Self

from gpu_operator.agents.exposition.address import ListenAddress
from gpu_operator.agents.exposition.snapshot import SnapshotHolder
from gpu_operator.agents.exposition.text_format import CONTENT_TYPE

__all__ = [
    "PLAIN_TEXT",
    "ExpositionServer",
    "Response",
    "Route",
    "health_route",
    "landing_route",
    "metrics_route",
]

_log = logging.getLogger(__name__)

PLAIN_TEXT = "text/plain; charset=utf-8"
_HTML = "text/html; charset=utf-8"
#: Seconds an idle kept-alive connection may wait for its next request.
_IDLE_TIMEOUT = 120
#: How often the accept loop checks whether it should stop (bounds how long `stop()` takes).
_SHUTDOWN_POLL = 0.1
#: The longest request line or header line read (as Go's and Python's servers, 64 KiB).
_MAX_LINE = 65536
#: The most header lines one request may carry.
_MAX_HEADERS = 100


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    content_type: str = PLAIN_TEXT


Route = Callable[[], Response]

_NOT_FOUND = Response(HTTPStatus.NOT_FOUND, b"404 page not found\n")


def metrics_route(holder: SnapshotHolder) -> Route:
    """`/metrics`: the body of the current snapshot, as collected."""
    return lambda: Response(HTTPStatus.OK, holder.current().body, CONTENT_TYPE)


def health_route(holder: SnapshotHolder) -> Route:
    """`/health`: `200 OK`; `200` "degraded" with one reason per line; or `503` "unhealthy" with the reasons."""

    def health() -> Response:
        verdict = holder.current().health
        if verdict.ok and not verdict.reasons:
            return Response(HTTPStatus.OK, b"OK")
        word, status = ("degraded", HTTPStatus.OK) if verdict.ok else ("unhealthy", HTTPStatus.SERVICE_UNAVAILABLE)
        text = f"{word}\n" + "".join(f"{reason}\n" for reason in verdict.reasons)
        return Response(status, text.encode())

    return health


def landing_route(title: str, links: Mapping[str, str]) -> Route:
    """`/`: a page linking the other endpoints (text -> relative URL)."""
    items = "".join(f'<p><a href="{url}">{text}</a></p>' for text, url in links.items())
    page = f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{items}</body></html>"
    response = Response(HTTPStatus.OK, page.encode(), _HTML)
    return lambda: response


def _head(response: Response, *, close: bool = False) -> bytes:
    status = HTTPStatus(response.status)
    extra = "Allow: GET, HEAD\r\n" if status is HTTPStatus.METHOD_NOT_ALLOWED else ""
    extra += "Connection: close\r\n" if close else ""
    return (
        f"HTTP/1.1 {status.value} {status.phrase}\r\n"
        f"Content-Type: {response.content_type}\r\n"
        f"Content-Length: {len(response.body)}\r\n"
        f"{extra}X-Content-Type-Options: nosniff\r\n\r\n"
    ).encode()


@dataclass(frozen=True, slots=True)
class _Request:
    method: str
    path: str
    keep_alive: bool


class _BadRequest(Exception):
    """The client sent something that is not an HTTP/1.x request; answered with 400 and the connection closed."""


_BAD_REQUEST = Response(HTTPStatus.BAD_REQUEST, b"400 bad request\n")
_NOT_ALLOWED = Response(HTTPStatus.METHOD_NOT_ALLOWED, b"405 method not allowed\n")


def _read_line(stream: socketserver.StreamRequestHandler) -> bytes:
    line = stream.rfile.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise _BadRequest("line too long")
    return line


def _read_request(stream: socketserver.StreamRequestHandler) -> _Request | None:
    """The next request on the connection, or None when the client closed it (or sent only blank lines)."""
    line = _read_line(stream)
    while line in (b"\r\n", b"\n"):  # RFC 9112 2.2: a server may ignore empty lines before the request line
        line = _read_line(stream)
    if not line:
        return None
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(f"request line {line[:80]!r}")
    method, target, version = parts
    connection = ""
    for _ in range(_MAX_HEADERS + 1):
        header = _read_line(stream)
        if header in (b"\r\n", b"\n", b""):
            break
        name, sep, value = header.decode("latin-1").partition(":")
        if not sep:
            raise _BadRequest(f"header line {header[:80]!r}")
        if name.strip().lower() == "connection":
            connection = value.strip().lower()
    else:
        raise _BadRequest("too many headers")
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return _Request(method, target.split("?", 1)[0], keep_alive)


class _Handler(socketserver.StreamRequestHandler):
    """One connection: answers GET and HEAD on the routes until the client closes it or stays idle too long."""

    timeout = _IDLE_TIMEOUT
    disable_nagle_algorithm = True
    routes: Mapping[str, Route] = {}

    def handle(self) -> None:
        try:
            while (request := _read_request(self)) is not None:
                self._answer(request)
                if not request.keep_alive:
                    return
        except _BadRequest as bad:
            _log.debug("%s: bad request: %s", self.client_address[0], bad)
            self.wfile.write(_head(_BAD_REQUEST, close=True) + _BAD_REQUEST.body)
        except (TimeoutError, ConnectionError):
            return

    def _answer(self, request: _Request) -> None:
        if request.method not in ("GET", "HEAD"):
            response = _NOT_ALLOWED
        else:
            route = self.routes.get(request.path)
            response = _NOT_FOUND if route is None else route()
        _log.debug("%s %s %s %d", self.client_address[0], request.method, request.path, response.status)
        head = _head(response, close=not request.keep_alive)
        self.wfile.write(head if request.method == "HEAD" else head + response.body)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True


class _DualStackServer(_Server):
    """Listens on `::` with IPv4-mapped addresses allowed: every interface of both families."""

    address_family = socket.AF_INET6

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class _IPv6Server(_Server):
    address_family = socket.AF_INET6


def _bind(address: ListenAddress, handler: type[_Handler]) -> _Server:
    if address.host:
        server_class = _IPv6Server if ":" in address.host else _Server
        return server_class((address.host, address.port), handler)
    try:
        return _DualStackServer(("::", address.port), handler)
    except OSError:
        return _Server(("0.0.0.0", address.port), handler)


class ExpositionServer:
    """Serves `routes` (path -> route) on `address` from a background thread: `start()` ... `stop()`."""

    def __init__(self, address: ListenAddress, routes: Mapping[str, Route]) -> None:
        handler = type("RouteHandler", (_Handler,), {"routes": dict(routes)})
        self._server = _bind(address, handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(_SHUTDOWN_POLL,), name="http", daemon=True
        )

    @property
    def port(self) -> int:
        """The port listened on (the kernel's choice when the address asked for port 0)."""
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
