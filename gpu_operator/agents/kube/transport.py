"""HTTP to the API server with the standard library: connections, authentication, retries.

`HttpTransport.request` sends one API request and returns the body of a 2xx answer; error answers become the
exceptions of :mod:`.errors`, after the retries :mod:`.retry` allows. Connections are kept alive and reused
(a small pool, safe to share between threads). `HttpTransport.stream` opens a dedicated connection for a
long-running answer (a watch) and hands back its lines as they arrive.
"""

from __future__ import annotations

import http.client
import json
import logging
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from gpu_operator.agents.kube.auth import TokenSource
from gpu_operator.agents.kube.config import ClusterConfig
from gpu_operator.agents.kube.errors import ApiUnreachable, KubeConfigError, api_error
from gpu_operator.agents.kube.retry import DEFAULT_RETRY, RetryPolicy, retries_network, retries_status
from gpu_operator.agents.kube.tls import ssl_context

__all__ = ["DEFAULT_TIMEOUT", "USER_AGENT", "HttpTransport", "Query"]

_log = logging.getLogger(__name__)

USER_AGENT = "gpu-operator-agent"
DEFAULT_TIMEOUT = 30.0
_POOL_SIZE = 4

Query = Mapping[str, str | int | bool | None]


class _NamedHttps(http.client.HTTPSConnection):
    """HTTPS whose certificate is checked against `server_name` (kubeconfig's tls-server-name), not the host."""

    def __init__(self, host: str, port: int | None, *, server_name: str, **options: Any) -> None:
        super().__init__(host, port, **options)
        self._server_name = server_name

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._server_name)  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class _Endpoint:
    scheme: str
    host: str
    port: int | None
    prefix: str


def _endpoint(server: str) -> _Endpoint:
    parts = urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise KubeConfigError(f"invalid API server URL {server!r}")
    return _Endpoint(parts.scheme, parts.hostname, parts.port, parts.path.rstrip("/"))


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _query_text(query: Query | None) -> str:
    if not query:
        return ""
    pairs = [
        (k, ("true" if v else "false") if isinstance(v, bool) else str(v)) for k, v in query.items() if v is not None
    ]
    return "?" + urlencode(pairs) if pairs else ""


class HttpTransport:
    """Requests against one API server, with the configuration's credentials and the retry policy."""

    def __init__(
        self,
        config: ClusterConfig,
        *,
        retry: RetryPolicy = DEFAULT_RETRY,
        timeout: float = DEFAULT_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self._endpoint = _endpoint(config.server)
        self._tls: ssl.SSLContext | None = ssl_context(config) if self._endpoint.scheme == "https" else None
        self._tokens = TokenSource(config.token, config.token_file)
        self._retry = retry
        self._timeout = timeout
        self._sleep = sleep
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    # connections -----------------------------------------------------------------------------------------------

    def _connect(self, timeout: float | None) -> http.client.HTTPConnection:
        endpoint = self._endpoint
        if self._tls is None:
            return http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=timeout)
        if self.config.tls_server_name:
            return _NamedHttps(
                endpoint.host,
                endpoint.port,
                server_name=self.config.tls_server_name,
                timeout=timeout,
                context=self._tls,
            )
        return http.client.HTTPSConnection(endpoint.host, endpoint.port, timeout=timeout, context=self._tls)

    def _acquire(self) -> http.client.HTTPConnection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._connect(self._timeout)

    def _release(self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse) -> None:
        if response.will_close:
            connection.close()
            return
        with self._lock:
            if len(self._idle) < _POOL_SIZE:
                self._idle.append(connection)
                return
        connection.close()

    def close(self) -> None:
        """Close the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    # requests --------------------------------------------------------------------------------------------------

    def _headers(self, accept: str, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        token = self._tokens.token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def _send_once(
        self, method: str, target: str, payload: bytes | None, headers: Mapping[str, str]
    ) -> tuple[int, Mapping[str, str], bytes]:
        connection = self._acquire()
        try:
            connection.request(method, target, body=payload, headers=dict(headers))
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            connection.close()
            raise
        self._release(connection, response)
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str = "application/json",
    ) -> bytes:
        """Send a request; returns the body of the 2xx answer. Raises ApiError or ApiUnreachable."""
        target = self._endpoint.prefix + path + _query_text(query)
        payload = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        if payload is not None and content_type is None:
            content_type = "application/json"
        headers = self._headers(accept, content_type)
        for attempt in range(1, self._retry.attempts + 1):
            last = attempt == self._retry.attempts
            try:
                status, response_headers, data = self._send_once(method, target, payload, headers)
            except (OSError, http.client.HTTPException) as error:
                network = error if isinstance(error, OSError) else ConnectionError(str(error))
                if last or not retries_network(method, network):
                    raise ApiUnreachable(f"{method} {path}: no answer from {self.config.server}: {error}") from error
                self._wait(attempt, None, f"{method} {path}: {error}")
                continue
            if 200 <= status < 300:
                return data
            retry_after = _retry_after(response_headers.get("retry-after"))
            if last or not retries_status(method, status, retry_after):
                raise api_error(status, data)
            self._wait(attempt, retry_after, f"{method} {path}: HTTP {status}")
        raise AssertionError("unreachable: the loop returns or raises")

    def _wait(self, attempt: int, retry_after: float | None, what: str) -> None:
        delay = self._retry.delay(attempt, retry_after)
        _log.warning("%s; retrying in %.2fs (attempt %d of %d)", what, delay, attempt + 1, self._retry.attempts)
        self._sleep(delay)

    @contextmanager
    def stream(
        self, path: str, *, query: Query | None = None, read_timeout: float | None = None
    ) -> Iterator[Iterator[bytes]]:
        """A GET whose answer is read line by line as it arrives (a watch), on a connection of its own.

        Opening it is retried like any GET; once open, a broken stream ends the iteration with ApiUnreachable.
        """
        target = self._endpoint.prefix + path + _query_text(query)
        headers = self._headers("application/json", None)
        for attempt in range(1, self._retry.attempts + 1):
            connection = self._connect(read_timeout)
            try:
                connection.request("GET", target, headers=headers)
                response = connection.getresponse()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                if attempt == self._retry.attempts:
                    raise ApiUnreachable(f"GET {path}: no answer from {self.config.server}: {error}") from error
                self._wait(attempt, None, f"GET {path}: {error}")
                continue
            if not 200 <= response.status < 300:
                data = response.read()
                connection.close()
                retry_after = _retry_after(response.getheader("retry-after"))
                if attempt == self._retry.attempts or not retries_status("GET", response.status, retry_after):
                    raise api_error(response.status, data)
                self._wait(attempt, retry_after, f"GET {path}: HTTP {response.status}")
                continue
            try:
                yield _lines(response, path)
            finally:
                connection.close()
            return


def _lines(response: http.client.HTTPResponse, path: str) -> Iterator[bytes]:
    while True:
        try:
            line = response.readline()
        except (TimeoutError, OSError, http.client.HTTPException) as error:
            raise ApiUnreachable(f"GET {path}: the stream broke: {error}") from error
        if not line:
            return
        if line.strip():
            yield line
