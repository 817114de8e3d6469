"""The exposition server: routes, health verdicts, kept-alive connections, listen addresses."""

from __future__ import annotations

import http.client
import re
import socket
import subprocess
import sys
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


def exchange(server: ExpositionServer, raw: bytes) -> bytes:
    """Send raw bytes on a fresh connection and read until the server closes it."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(raw)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_other_methods_get_405_with_allow(server: ExpositionServer) -> None:
    answer = exchange(server, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 405 Method Not Allowed\r\n")
    assert b"Allow: GET, HEAD\r\n" in answer and b"Connection: close\r\n" in answer


@pytest.mark.parametrize("raw", [b"hello\r\n\r\n", b"GET /metrics SPDY/3\r\n\r\n",
                                 b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n",
                                 b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n"])
def test_malformed_requests_get_400_and_the_connection_closes(server: ExpositionServer, raw: bytes) -> None:
    answer = exchange(server, raw)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"Connection: close\r\n" in answer


def test_http_1_0_and_connection_close_end_the_connection_after_one_answer(server: ExpositionServer) -> None:
    for raw in (b"GET /metrics HTTP/1.0\r\n\r\n", b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n"):
        answer = exchange(server, raw + raw)  # the second request is never answered
        assert answer.count(b"HTTP/1.1 200 OK") == 1 and answer.endswith(BODY)


def test_pipelined_requests_are_answered_in_order(server: ExpositionServer) -> None:
    answer = exchange(server, b"GET /health HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\n\r\n"
                              b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert re.findall(rb"HTTP/1\.1 (\d{3}) ", answer) == [b"200", b"404", b"200"]
    assert answer.endswith(BODY)


def test_serving_loads_no_http_client_email_or_ssl() -> None:
    """A scrape needs the request line and the end of the headers; `http.server` would load `http.client`, `email`
    and `ssl` (about 6 MiB resident in every agent)."""
    program = ("import sys; from gpu_operator.agents.exposition import server; "
               "print(sorted(m for m in ('ssl', 'http.client', 'http.server', 'email') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


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
