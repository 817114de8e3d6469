"""The exposition server: routes, health verdicts, kept-alive connections, listen addresses."""

from __future__ import annotations

import http.client
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from gpu_operator.agents.exposition import (
    CONTENT_TYPE,
    ExpositionServer,
    Health,
    ListenAddress,
    Snapshot,
    SnapshotHolder,
    health_route,
    landing_route,
    metrics_route,
    parse_listen_address,
)

BODY = b"# HELP up ok\n# TYPE up gauge\nup 1\n"


@pytest.fixture
def holder() -> SnapshotHolder:
    return SnapshotHolder(Snapshot(BODY))


@pytest.fixture
def server(holder: SnapshotHolder) -> Iterator[ExpositionServer]:
    routes = {
        "/metrics": metrics_route(holder),
        "/health": health_route(holder),
        "/": landing_route("GPU Exporter", {"Metrics": "./metrics"}),
    }
    with ExpositionServer(ListenAddress("127.0.0.1", 0), routes) as running:
        yield running


def get(server: ExpositionServer, path: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def test_metrics_serves_the_current_snapshot(server: ExpositionServer, holder: SnapshotHolder) -> None:
    assert get(server, "/metrics") == (200, CONTENT_TYPE, BODY)
    holder.publish(Snapshot(b"up 2\n"))
    assert get(server, "/metrics?format=text")[2] == b"up 2\n"


def test_health_reports_reasons_with_503(server: ExpositionServer, holder: SnapshotHolder) -> None:
    assert get(server, "/health") == (200, "text/plain; charset=utf-8", b"OK")
    holder.set_health(Health.failing("GPU 3 (GPU-x) is lost", "collection failed: boom"))
    reasons = b"unhealthy\nGPU 3 (GPU-x) is lost\ncollection failed: boom\n"
    assert get(server, "/health") == (503, "text/plain; charset=utf-8", reasons)
    assert get(server, "/metrics")[2] == BODY


def test_landing_page_and_unknown_paths(server: ExpositionServer) -> None:
    status, kind, page = get(server, "/")
    assert (status, kind) == (200, "text/html; charset=utf-8")
    assert b'<a href="./metrics">Metrics</a>' in page
    assert get(server, "/nope")[0] == 404


def test_connections_are_kept_alive_and_head_has_no_body(server: ExpositionServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    for _ in range(3):
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        assert response.read() == BODY
        assert response.headers["Content-Length"] == str(len(BODY))
    connection.request("HEAD", "/metrics")
    response = connection.getresponse()
    assert response.status == 200 and response.read() == b""
    connection.close()


def test_a_new_holder_is_unhealthy_until_the_first_collection() -> None:
    assert SnapshotHolder().current() == Snapshot(b"", Health.failing("no collection has completed yet"))


def test_every_interface_listens_on_both_families_when_possible() -> None:
    routes = {"/metrics": metrics_route(SnapshotHolder(Snapshot(BODY)))}
    with ExpositionServer(parse_listen_address(":0"), routes) as running:
        connection = socket.create_connection(("127.0.0.1", running.port), timeout=5)
        connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
        connection.close()
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n") and reply.endswith(BODY)


@pytest.mark.parametrize(
    ("spec", "address"),
    [(":9400", ListenAddress("", 9400)), ("127.0.0.1:8000", ListenAddress("127.0.0.1", 8000)),
     ("[::1]:0", ListenAddress("::1", 0))],
)
def test_listen_addresses(spec: str, address: ListenAddress) -> None:
    assert parse_listen_address(spec) == address


@pytest.mark.parametrize("spec", ["9400", ":http", "::1:9400", "[::1:9400", ":70000"])
def test_bad_listen_addresses(spec: str) -> None:
    with pytest.raises(ValueError, match="invalid listen address"):
        parse_listen_address(spec)


def test_a_busy_port_fails_to_bind(server: ExpositionServer) -> None:
    with pytest.raises(OSError):
        ExpositionServer(ListenAddress("127.0.0.1", server.port), {})
