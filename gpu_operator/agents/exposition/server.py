"""A small threaded HTTP server for an exporter's endpoints (`/metrics`, `/health`, a landing page).

Each route is a function returning a complete :class:`Response`; for `/metrics` that is the pre-rendered body
of the latest snapshot, so serving a scrape is a dictionary lookup and one socket write. Connections are kept
alive (HTTP/1.1, as Prometheus scrapes), each on its own daemon thread; the response goes out in a single write
with Nagle's algorithm off, so a scrape is never held back by delayed ACKs. An empty host listens on every
interface, IPv6 and IPv4 where the node has both.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


def _head(response: Response) -> bytes:
    status = HTTPStatus(response.status)
    return (
        f"HTTP/1.1 {status.value} {status.phrase}\r\n"
        f"Content-Type: {response.content_type}\r\n"
        f"Content-Length: {len(response.body)}\r\n"
        "X-Content-Type-Options: nosniff\r\n\r\n"
    ).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = _IDLE_TIMEOUT
    routes: Mapping[str, Route] = {}

    def _respond(self, with_body: bool) -> None:
        route = self.routes.get(self.path.split("?", 1)[0])
        response = _NOT_FOUND if route is None else route()
        self.wfile.write(_head(response) + response.body if with_body else _head(response))

    def do_GET(self) -> None:
        self._respond(with_body=True)

    def do_HEAD(self) -> None:
        self._respond(with_body=False)

    def log_message(self, format: str, *args: object) -> None:
        _log.debug("%s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
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


def _bind(address: ListenAddress, handler: type[BaseHTTPRequestHandler]) -> _Server:
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
