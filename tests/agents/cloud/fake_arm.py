"""A fake of Azure Resource Manager's VMSS VM endpoints on 127.0.0.1, over TLS, answering as ARM answers.

What it serves, each request recorded (method, path, query, headers):

* POST `.../virtualMachineScaleSets/<vmss>/virtualMachines/<id>/restart` and `/reimage`: the next answer queued for
  that operation (:meth:`FakeArm.throttle`, :meth:`FakeArm.conflict`, :meth:`FakeArm.accept`), by default an
  accepted operation: 202 with `Azure-AsyncOperation` (the operation status resource) and `Location` (the same with
  `monitor=true`), as Microsoft.Compute answers;
* GET of the operation status: `{"status": "InProgress"}` for the number of polls the operation was given, then
  `Succeeded`, or `Failed` with an ARM error; an operation given no end stays `InProgress` forever;
* GET of the `Location` monitor: 202 while the operation runs, 200 once it has ended;
* GET `.../virtualMachines/<id>/instanceView`: ProvisioningState and PowerState statuses (`updating`/`starting`
  while an operation runs on the instance);
* anything addressed to an instance it does not know: 404 `ResourceNotFound`; a request without the bearer token:
  401.

ARM's `Retry-After` rides on 429 answers and, when asked, on operation status answers. The server needs HTTPS
because azure-core sends a bearer token over TLS only; the certificate is made here for 127.0.0.1 and handed to the
client as the CA to trust (`connection_verify`).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import re
import ssl
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.http_servers import QuietThreadingHTTPServer

TOKEN = "fake-arm-token"
LOCATION = "westeurope"
_INSTANCE = re.compile(
    r"^/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/Microsoft\.Compute/"
    r"virtualMachineScaleSets/(?P<vmss>[^/]+)/virtualMachines/(?P<id>[^/]+)(?:/(?P<verb>[^/]+))?$", re.IGNORECASE)
_OPERATION = re.compile(
    r"^/subscriptions/(?P<sub>[^/]+)/providers/Microsoft\.Compute/locations/[^/]+/operations/(?P<op>[^/]+)$",
    re.IGNORECASE)


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]

    @property
    def api_version(self) -> str | None:
        return self.query.get("api-version", [None])[0]


@dataclass(frozen=True)
class Reply:
    """One queued answer to a POST: an error (status, ARM error) or an accepted operation."""

    status: int
    error: dict[str, str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    polls: int | None = 0
    """For an accepted operation: InProgress answers before it ends (None: it never ends)."""
    end: str = "Succeeded"
    end_error: dict[str, str] | None = None
    poll_retry_after: int | None = None


@dataclass
class Operation:
    instance: tuple[str, str, str, str]
    polls_left: int | None
    end: str
    end_error: dict[str, str] | None
    retry_after: int | None
    finished: bool = False


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA) and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-arm")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, False, False, False), True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "arm.pem", directory / "arm-key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


class FakeArm:
    """The fake ARM: queue answers, start it, point the SDK at `url` trusting `ca_file`, read `requests`."""

    def __init__(self, directory: Path, instances: set[tuple[str, str, str, str]]) -> None:
        self.ca_file, key_file = make_certificate(directory)
        self.instances = {tuple(part.lower() for part in i) for i in instances}
        self.requests: list[Recorded] = []
        self.operations: dict[str, Operation] = {}
        self.state = {"provisioning": "succeeded", "power": "running"}
        self._replies: dict[str, deque[Reply]] = {"restart": deque(), "reimage": deque()}
        self._lock = threading.Lock()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.ca_file, key_file)
        self._server = QuietThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="fake-arm", daemon=True)

    def __enter__(self) -> FakeArm:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    # --- scripting ------------------------------------------------------------------------------------------------

    def throttle(self, verb: str, retry_after: int, times: int = 1) -> None:
        for _ in range(times):
            self._replies[verb].append(Reply(429, {"code": "TooManyRequests", "message": (
                "The request is being throttled as the limit has been reached for operation type - Write"
            )}, {"Retry-After": str(retry_after)}))

    def conflict(self, verb: str, code: str, message: str) -> None:
        self._replies[verb].append(Reply(409, {"code": code, "message": message}))

    def accept(self, verb: str, polls: int | None = 1, end: str = "Succeeded", end_error: dict[str, str] | None = None,
               poll_retry_after: int | None = None) -> None:
        self._replies[verb].append(Reply(202, polls=polls, end=end, end_error=end_error,
                                         poll_retry_after=poll_retry_after))

    def fail_with(self, verb: str, status: int, code: str, message: str) -> None:
        self._replies[verb].append(Reply(status, {"code": code, "message": message}))

    # --- queries --------------------------------------------------------------------------------------------------

    def calls(self, method: str | None = None, suffix: str = "") -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if (method is None or r.method == method) and r.path.endswith(suffix)]

    # --- serving --------------------------------------------------------------------------------------------------

    def answer(self, method: str, path: str, query: dict[str, list[str]],
               headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.requests.append(Recorded(method, path, query, headers))
            if headers.get("authorization") != f"Bearer {TOKEN}":
                return _error(401, "AuthenticationFailed", "Authentication failed: no valid bearer token.")
            if not query.get("api-version"):
                return _error(400, "MissingApiVersionParameter", "The api-version query parameter is required.")
            operation = _OPERATION.match(path)
            if method == "GET" and operation is not None:
                return self._operation_status(operation["op"], "monitor" in query)
            match = _INSTANCE.match(path)
            if match is None:
                return _error(404, "NotFound", f"no route for {method} {path}")
            key = (match["sub"].lower(), match["rg"].lower(), match["vmss"].lower(), match["id"].lower())
            if key not in self.instances:
                return _error(404, "ResourceNotFound", f"The Resource 'Microsoft.Compute/virtualMachineScaleSets/"
                                                       f"{match['vmss']}/virtualMachines/{match['id']}' under "
                                                       f"resource group '{match['rg']}' was not found.")
            verb = (match["verb"] or "").lower()
            if method == "GET" and verb == "instanceview":
                return 200, {}, {"statuses": [
                    {"code": f"ProvisioningState/{self.state['provisioning']}", "level": "Info"},
                    {"code": f"PowerState/{self.state['power']}", "level": "Info"}]}
            if method == "POST" and verb in self._replies:
                return self._start(verb, key, match["sub"], query["api-version"][0])
            return _error(405, "MethodNotAllowed", f"{method} {path}")

    def _start(self, verb: str, key: tuple[str, str, str, str], sub: str,
               api_version: str) -> tuple[int, dict[str, str], Any]:
        reply = self._replies[verb].popleft() if self._replies[verb] else Reply(202, polls=1)
        if reply.status != 202:
            status, headers, body = _error(reply.status, **(reply.error or {}))
            return status, {**headers, **reply.headers}, body
        name = str(uuid.uuid4())
        self.operations[name] = Operation(key, reply.polls, reply.end, reply.end_error, reply.poll_retry_after)
        self.state = {"provisioning": "updating", "power": "starting" if verb == "restart" else "stopped"}
        status_url = (f"{self.url}/subscriptions/{sub}/providers/Microsoft.Compute/locations/{LOCATION}/operations/"
                      f"{name}?p=fake&api-version={api_version}")
        return 202, {"Azure-AsyncOperation": status_url, "Location": f"{status_url}&monitor=true"}, None

    def _operation_status(self, name: str, monitor: bool) -> tuple[int, dict[str, str], Any]:
        operation = self.operations.get(name)
        if operation is None:
            return _error(404, "NotFound", f"operation {name} not found")
        if monitor:
            return (200, {}, None) if operation.finished else (202, {}, None)
        headers = {"Retry-After": str(operation.retry_after)} if operation.retry_after is not None else {}
        if operation.polls_left is None or operation.polls_left > 0:
            if operation.polls_left is not None:
                operation.polls_left -= 1
            return 200, headers, {"name": name, "status": "InProgress", "startTime": "2025-01-01T00:00:00Z"}
        operation.finished = True
        self.state = {"provisioning": "succeeded" if operation.end == "Succeeded" else "failed", "power": "running"}
        body: dict[str, Any] = {"name": name, "status": operation.end, "startTime": "2025-01-01T00:00:00Z",
                                "endTime": "2025-01-01T00:03:00Z"}
        if operation.end_error is not None:
            body["error"] = operation.end_error
        return 200, headers, body


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], Any]:
    return status, {"x-ms-failure-cause": "gateway"}, {"error": {"code": code, "message": message}}


def _handler(arm: FakeArm) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            parts = urlsplit(self.path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, reply_headers, body = arm.answer(self.command, parts.path, parse_qs(parts.query), headers)
            payload = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            for key, value in reply_headers.items():
                self.send_header(key, value)
            if payload:
                self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
            pass

    return Handler
