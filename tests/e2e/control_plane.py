"""A Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK.

Everything lives in one temporary directory and listens on 127.0.0.1 at free ports. The API server serves a
certificate signed by a CA made for the run, authenticates an admin by a static token (group `system:masters`) and
service accounts by tokens it signs itself (TokenRequest), and authorizes with RBAC only, so a service account can
do exactly what the rendered Roles and ClusterRoles grant. The controller manager runs the DaemonSet, garbage
collector, namespace and service-account controllers a real cluster runs; the scheduler binds DaemonSet pods; KWOK
plays the kubelet of nodes annotated `kwok.x-k8s.io/node: fake` (they heartbeat, and their pods turn Running
without any container). Every request a service account makes is written to an audit log, which tells what an
agent asked for and what RBAC answered (see :mod:`tests.e2e.rbac`).

Each program runs in its own process group and is always stopped (SIGTERM, then SIGKILL after a bounded wait);
a program that exits early fails the start with the tail of its log.
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from lightkube import Client, KubeConfig

from tests.e2e.tools import E2eTools

__all__ = ["ControlPlane", "ControlPlaneError", "running_control_plane", "start_control_plane", "stop_process_group", "KWOK_ANNOTATION"]

#: Nodes with this annotation are played by KWOK.
KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
_SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
_STOP_SECONDS = 15.0
_READY_SECONDS = 120.0
#: KWOK's stage sets: nodes become Ready at once and keep a lease; pods become Running, complete and go.
_KWOK_STAGES = ("node/fast", "node/heartbeat-with-lease", "pod/fast")
#: Our own stages, beside KWOK's (the validator's workload pods run to completion).
_OWN_STAGES = Path(__file__).resolve().parent / "kwok-stages"
#: Requests of service accounts are audited (metadata only); nothing else is.
_AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "userGroups": ["system:serviceaccounts"]}, {"level": "None"}],
}


class ControlPlaneError(RuntimeError):
    """A program of the control plane did not start or did not become ready."""


_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the test process dies, even by SIGKILL (Linux), so a killed
    pytest leaves no control plane behind."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise ControlPlaneError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def make_certificates(directory: Path) -> None:
    """A CA, a serving certificate for 127.0.0.1/localhost signed by it, and the service-account key pair."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=e2e-ca", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "serving.key", "-out", "serving.csr",
             "-subj", "/CN=kube-apiserver", cwd=directory)
    (directory / "serving.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n"
        "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
    )
    _openssl("x509", "-req", "-in", "serving.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "serving.crt", "-days", "2", "-extfile", "serving.ext", cwd=directory)
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=directory)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=directory)


def kubeconfig(server: str, ca_file: Path, token: str) -> dict[str, Any]:
    """A kubeconfig document for one bearer token."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [{"name": "user", "user": {"token": token}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "user"}}],
        "current-context": "e2e",
    }


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    argv: tuple[str, ...] = ()

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class ControlPlane:
    """A running control plane; `stop()` ends every program it started."""

    workdir: Path
    tools: E2eTools
    server: str = ""
    admin_token: str = field(default_factory=lambda: secrets.token_hex(16))
    processes: list[_Process] = field(default_factory=list)
    apiserver_flags: tuple[str, ...] = ()
    """Extra kube-apiserver flags (e.g. low max-in-flight limits, to be throttled)."""

    @property
    def ca_file(self) -> Path:
        return self.workdir / "pki" / "ca.crt"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    @property
    def audit_log(self) -> Path:
        return self.workdir / "audit.log"

    def audit_events(self, username: str) -> list[dict[str, Any]]:
        """The completed requests of one user, as the API server audited them."""
        if not self.audit_log.exists():
            return []
        events = []
        for line in self.audit_log.read_text().splitlines():
            event = json.loads(line)
            if event.get("user", {}).get("username") == username and event.get("stage") == "ResponseComplete":
                events.append(event)
        return events

    def write_kubeconfig(self, path: Path, token: str) -> Path:
        path.write_text(yaml.safe_dump(kubeconfig(self.server, self.ca_file, token)))
        return path

    def client(self, token: str | None = None, field_manager: str = "e2e") -> Client:
        """A lightkube client as the admin, or as the holder of `token`."""
        config = KubeConfig.from_dict(kubeconfig(self.server, self.ca_file, token or self.admin_token))
        return Client(config=config, field_manager=field_manager, trust_env=False)

    def start(self, name: str, argv: Sequence[str]) -> _Process:
        log = self.workdir / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            popen = subprocess.Popen(
                list(argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.workdir,
                start_new_session=True, env={**os.environ, "KUBECONFIG": ""}, preexec_fn=_die_with_parent,
            )
        process = _Process(name, popen, log, tuple(argv))
        self.processes.append(process)
        return process

    def process(self, name: str) -> _Process:
        return next(p for p in self.processes if p.name == name)

    def signal(self, name: str, sig: signal.Signals) -> None:
        """Send a signal to one program (SIGSTOP freezes it, SIGCONT thaws it)."""
        os.killpg(self.process(name).popen.pid, sig)

    def kill(self, name: str) -> None:
        """SIGKILL one program, as a crash would end it."""
        process = self.process(name)
        self.signal(name, signal.SIGKILL)
        process.popen.wait(timeout=_STOP_SECONDS)

    def start_again(self, name: str) -> None:
        """Start a killed program again with its arguments, in the same place of the list."""
        old = self.process(name)
        index = self.processes.index(old)
        self.processes.remove(old)
        self.start(name, old.argv)
        self.processes.insert(index, self.processes.pop())

    def check_running(self) -> None:
        """Raise when a program of the control plane has exited."""
        for process in self.processes:
            code = process.popen.poll()
            if code is not None:
                raise ControlPlaneError(f"{process.name} exited with status {code}:\n{process.tail()}")

    def stop(self) -> None:
        """Stop the programs newest first (KWOK and the controllers, then the API server, then etcd): SIGTERM to
        the process group, SIGKILL when it has not exited within a bounded wait."""
        for process in reversed(self.processes):
            stop_process_group(process.popen)
        self.processes.clear()

    def _ready(self, path: str) -> bool:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        request = urllib.request.Request(self.server + path, headers={"Authorization": f"Bearer {self.admin_token}"})
        try:
            with urllib.request.urlopen(request, context=context, timeout=5) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self, path: str = "/readyz", timeout: float = _READY_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while not self._ready(path):
            self.check_running()
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"the API server at {self.server} was not ready within {timeout:.0f}s")
            time.sleep(0.5)


def stop_process_group(popen: subprocess.Popen[bytes]) -> None:
    """Stop a process started in a session of its own, and its children: SIGTERM, then SIGKILL, each bounded."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if popen.poll() is not None:
            return
        try:
            os.killpg(popen.pid, sig)
        except ProcessLookupError:
            return
        try:
            popen.wait(timeout=_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            continue


def _etcd(plane: ControlPlane) -> str:
    client, peer = free_port(), free_port()
    plane.start("etcd", [
        str(plane.tools.path("etcd")), "--name=e2e", f"--data-dir={plane.workdir / 'etcd'}",
        f"--listen-client-urls=http://127.0.0.1:{client}", f"--advertise-client-urls=http://127.0.0.1:{client}",
        f"--listen-peer-urls=http://127.0.0.1:{peer}", f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-cluster=e2e=http://127.0.0.1:{peer}", "--unsafe-no-fsync=true", "--log-level=warn",
    ])
    return f"http://127.0.0.1:{client}"


def _apiserver(plane: ControlPlane, etcd: str) -> None:
    pki = plane.workdir / "pki"
    port = free_port()
    (pki / "tokens.csv").write_text(f"{plane.admin_token},admin,admin,system:masters\n")
    policy = plane.workdir / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(_AUDIT_POLICY))
    plane.server = f"https://127.0.0.1:{port}"
    plane.start("kube-apiserver", [
        str(plane.tools.path("kube-apiserver")), f"--etcd-servers={etcd}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
        f"--cert-dir={plane.workdir / 'apiserver-certs'}",
        f"--tls-cert-file={pki / 'serving.crt'}", f"--tls-private-key-file={pki / 'serving.key'}",
        f"--client-ca-file={pki / 'ca.crt'}", f"--token-auth-file={pki / 'tokens.csv'}",
        "--authorization-mode=RBAC", "--allow-privileged=true",
        f"--service-account-issuer={_SERVICE_ACCOUNT_ISSUER}", f"--api-audiences={_SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--service-cluster-ip-range=10.96.0.0/16", "--endpoint-reconciler-type=none",
        f"--audit-policy-file={policy}", f"--audit-log-path={plane.audit_log}", "--audit-log-format=json",
        "--enable-priority-and-fairness=false", "--profiling=false", "--v=1", *plane.apiserver_flags,
    ])


def _controllers(plane: ControlPlane) -> None:
    pki = plane.workdir / "pki"
    kubeconfig_path = str(plane.admin_kubeconfig)
    plane.start("kube-controller-manager", [
        str(plane.tools.path("kube-controller-manager")), f"--kubeconfig={kubeconfig_path}",
        "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
        f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
        "--use-service-account-credentials=false", "--controllers=*", "--concurrent-daemonset-syncs=4",
        "--profiling=false", "--v=1",
    ])
    plane.start("kube-scheduler", [
        str(plane.tools.path("kube-scheduler")), f"--kubeconfig={kubeconfig_path}", "--leader-elect=false",
        "--bind-address=127.0.0.1", "--secure-port=0", "--profiling=false", "--v=1",
    ])
    stages = [
        f"--config={path}"
        for stage in _KWOK_STAGES
        for path in sorted((plane.tools.stages_dir / stage).glob("*.yaml"))
        if path.name != "kustomization.yaml"
    ] + [f"--config={path}" for path in sorted(_OWN_STAGES.glob("*.yaml"))]
    plane.start("kwok", [
        str(plane.tools.path("kwok")), f"--kubeconfig={kubeconfig_path}",
        "--manage-all-nodes=false", f"--manage-nodes-with-annotation-selector={'='.join(KWOK_ANNOTATION)}",
        f"--server-address=127.0.0.1:{free_port()}", "--node-lease-duration-seconds=40", *stages,
    ])


def start_control_plane(tools: E2eTools, workdir: Path, apiserver_flags: Sequence[str] = ()) -> ControlPlane:
    """Start every program and return once the API server is ready; on failure nothing is left running."""
    plane = ControlPlane(workdir=workdir, tools=tools, apiserver_flags=tuple(apiserver_flags))
    try:
        make_certificates(workdir / "pki")
        etcd = _etcd(plane)
        _apiserver(plane, etcd)
        plane.write_kubeconfig(plane.admin_kubeconfig, plane.admin_token)
        plane.wait_ready()
        _controllers(plane)
        time.sleep(1.0)
        plane.check_running()
    except BaseException:
        plane.stop()
        raise
    return plane


@contextmanager
def running_control_plane(tools: E2eTools, workdir: Path, apiserver_flags: Sequence[str] = ()
                          ) -> Iterator[ControlPlane]:
    """A started control plane, always stopped when the block ends."""
    plane = start_control_plane(tools, workdir, apiserver_flags)
    try:
        yield plane
    finally:
        plane.stop()
