"""`gpu-operator-agent operator` as a process against the fake API server: two replicas, one leading; SIGTERM
makes the leader give the Lease up and exit 0 by itself, and the standby takes over without waiting out the
lease duration (client-go's `ReleaseOnCancel`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_operator.agents.controller.leader import LEASE_NAME
from tests.agents.kube.fake_apiserver import FakeApiServer

NS = "gpu-operator"


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        running.add({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": "gpu-0", "labels": {"feature.node.kubernetes.io/pci-10de.present": "true"}}})
        yield running


def _holder(server: FakeApiServer) -> str:
    lease = server.get("leases", LEASE_NAME, NS, group="coordination.k8s.io")
    return (lease or {}).get("spec", {}).get("holderIdentity", "")


def _replica(server: FakeApiServer, tmp_path: Path, name: str) -> subprocess.Popen[bytes]:
    workdir = tmp_path / name
    workdir.mkdir()
    (workdir / "controller.json").write_text("{}")
    env = {"PATH": os.environ.get("PATH", ""), "KUBECONFIG": str(server.kubeconfig(workdir)),
           "OPERATOR_NAMESPACE": NS, "GPU_OPERATOR_CONTROLLER_CONFIG": str(workdir / "controller.json")}
    log = (workdir / "log").open("w")
    return subprocess.Popen([sys.executable, "-m", "gpu_operator.agents.cli", "operator", "--metrics-bind-address",
                             "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)


def _wait(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_sigterm_releases_the_lease_to_the_standby(server: FakeApiServer, tmp_path: Path) -> None:
    first = _replica(server, tmp_path, "first")
    second = None
    try:
        _wait(lambda: _holder(server).endswith(f"_{first.pid}"), 30, "the first replica to lead")
        second = _replica(server, tmp_path, "second")
        standby = f"_{second.pid})"  # each replica names itself in its User-Agent
        _wait(lambda: any(r.path.endswith(LEASE_NAME) and r.headers.get("user-agent", "").endswith(standby)
                          for r in server.requests), 30, "the second replica to stand by")
        _wait(lambda: server.get("nodes", "gpu-0")["metadata"].get("labels", {}).get("nvidia.com/gpu.present")
              == "true", 30, "the leader's first round")
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=20) == 0  # it exits by itself, long before a kubelet's SIGKILL would come
        _wait(lambda: _holder(server).endswith(f"_{second.pid}"), 10, "the standby to take over")
        lease = server.get("leases", LEASE_NAME, NS, group="coordination.k8s.io")
        assert lease["spec"]["leaseTransitions"] == 1  # created by the first, taken over once
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
    log = (tmp_path / "first" / "log").read_text()
    assert "released the Lease" in log and "Traceback" not in log


def test_the_leader_election_timings_are_controller_runtimes_flags(server: FakeApiServer, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """--leader-elect-lease-duration, -renew-deadline and -retry-period as controller-runtime names them (Go
    durations); timings out of client-go's order (retry < renew deadline < lease) are refused, exit 2."""
    from gpu_operator.agents.controller import command

    args = command.build_parser().parse_args(["--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
                                              "--leader-elect-retry-period=500ms"])
    assert (args.leader_elect_lease_duration, args.leader_elect_renew_deadline, args.leader_elect_retry_period) == (
        4.0, 3.0, 0.5)
    (tmp_path / "controller.json").write_text("{}")
    monkeypatch.setenv("KUBECONFIG", str(server.kubeconfig(tmp_path)))
    monkeypatch.setenv("OPERATOR_NAMESPACE", NS)
    monkeypatch.setenv("GPU_OPERATOR_CONTROLLER_CONFIG", str(tmp_path / "controller.json"))
    assert command.main(["--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=3s"]) == 2
    assert "retry < renew deadline < lease duration" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        command.build_parser().parse_args(["--leader-elect-lease-duration=15x"])
