"""The I/O layer against an API server played from fixtures (what `diag` reads, how, and how refusals end), and
the command line: exit status by the worst finding, JSON and text reports, bad input with status 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from lightkube import Client, KubeConfig

import gpu_operator.diag.fetch as fetch
from gpu_operator.cli import main
from gpu_operator.config import ConfigError
from gpu_operator.diag import diagnose
from gpu_operator.diag.fetch import connect, parse_selector, take_snapshot
from tests.diag.cluster import NS, cluster, crash_loop_objects

SERVER = "https://diag.test:6443"
CONFIG = {"apiVersion": "v1", "kind": "Config",
          "clusters": [{"name": "c", "cluster": {"server": SERVER, "insecure-skip-tls-verify": True}}],
          "users": [{"name": "u", "user": {"token": "t"}}],
          "contexts": [{"name": "prod", "context": {"cluster": "c", "user": "u"}}], "current-context": "prod"}


class FakeApi:
    """Serves list and get requests from fixture objects; records every request."""

    def __init__(self, objects: dict[str, Any], status: dict[str, int] | None = None) -> None:
        self.objects = objects
        self.status = status or {}
        self.requests: list[httpx2.Request] = []
        self.gpu_pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "namespace": "ml"},
                        "spec": {"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
                        "status": {"phase": "Pending"}}
        self.routes: dict[str, Callable[[], Any]] = {
            "/api/v1/nodes": lambda: self._list("NodeList", objects["nodes"]),
            f"/api/v1/namespaces/{NS}": lambda: {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": NS}},
            f"/api/v1/namespaces/{NS}/pods": lambda: self._list("PodList", objects["pods"]),
            "/api/v1/pods": lambda: self._list("PodList", [self.gpu_pod]),
            f"/apis/apps/v1/namespaces/{NS}/daemonsets": lambda: self._list("DaemonSetList", objects["daemonsets"]),
            f"/api/v1/namespaces/{NS}/configmaps": lambda: self._list("ConfigMapList", objects["config_maps"]),
            f"/api/v1/namespaces/{NS}/events": lambda: self._list("EventList", objects["events"]),
            "/api/v1/namespaces/ml/events": lambda: self._list("EventList", [{
                "apiVersion": "v1", "kind": "Event", "metadata": {"name": "trainer.1", "namespace": "ml"},
                "type": "Warning", "reason": "FailedScheduling",
                "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
                "involvedObject": {"kind": "Pod", "name": "trainer", "namespace": "ml"}}]),
            "/apis/mellanox.com/v1alpha1/nicclusterpolicies": lambda: self._list(
                "NicClusterPolicyList", [objects["nic_cluster_policy"]]),
        }

    @staticmethod
    def _list(kind: str, items: list[Any]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": "1"}, "items": items}

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        path = request.url.path
        code = self.status.get(path)
        if code is not None or path not in self.routes:
            code = code or 404
            return httpx2.Response(code, json={"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                               "message": f"{path} answered {code}", "code": code})
        return httpx2.Response(200, json=self.routes[path]())

    def client(self) -> Client:
        return Client(config=KubeConfig.from_dict(CONFIG), transport=httpx2.MockTransport(self.handle))


def test_the_snapshot_is_read_with_get_and_list_only_and_judged_like_the_fixture() -> None:
    api = FakeApi(cluster())
    snapshot = take_snapshot(api.client(), SERVER, NS)
    assert {r.method for r in api.requests} == {"GET"}
    assert len(snapshot.nodes) == 4 and len(snapshot.pods) == len(cluster()["pods"])
    assert snapshot.cluster_policy is None and snapshot.nic_cluster_policy is not None  # its CRD is absent: 404
    cluster_wide = next(r for r in api.requests if r.url.path == "/api/v1/pods")
    assert cluster_wide.url.params["fieldSelector"] == "status.phase!=Running,status.phase!=Succeeded"
    diagnosis = diagnose(snapshot)
    assert [(f.check, f.subject) for f in diagnosis.findings] == [("gpu-pod-pending", "pod/ml/trainer")]
    assert "Insufficient nvidia.com/gpu" in diagnosis.findings[0].what  # read from the pod's own events


def test_a_node_selector_goes_to_the_api_server() -> None:
    api = FakeApi(cluster())
    take_snapshot(api.client(), SERVER, NS, "kubernetes.azure.com/agentpool=h100,!spot")
    nodes = next(r for r in api.requests if r.url.path == "/api/v1/nodes")
    assert nodes.url.params["labelSelector"] == "kubernetes.azure.com/agentpool=h100,!spot"


@pytest.mark.parametrize("text", ["a in (b)", "a=b,,c", ""])
def test_selectors_diag_cannot_send_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="key=value, key!=value, key or !key"):
        parse_selector(text)


def test_parse_selector_terms() -> None:
    parsed = parse_selector("a=b,c!=d,e,!f")
    assert set(parsed) == {"a", "c", "e", "f"} and parsed["a"] == "b" and parsed["e"] is None


@pytest.mark.parametrize(("path", "code", "message"), [
    ("/api/v1/nodes", 403, "refused to list nodes"),
    (f"/api/v1/namespaces/{NS}/pods", 403, f"refused to list pods in {NS}"),
    (f"/apis/apps/v1/namespaces/{NS}/daemonsets", 500, f"failed to list daemonsets in {NS}"),
    (f"/api/v1/namespaces/{NS}", 404, f"has no namespace '{NS}'"),
])
def test_required_reads_refused_end_with_a_clear_error(path: str, code: int, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        take_snapshot(FakeApi(cluster(), {path: code}).client(), SERVER, NS)
    assert raised.value.source == SERVER and message in str(raised.value.problems[0])


def test_optional_reads_refused_become_notes() -> None:
    refused = {f"/api/v1/namespaces/{NS}/events": 403, "/api/v1/pods": 403, f"/api/v1/namespaces/{NS}": 403}
    snapshot = take_snapshot(FakeApi(cluster(), refused).client(), SERVER, NS)
    assert snapshot.events == [] and snapshot.gpu_pods == []
    assert [note.split(" could not")[0] for note in snapshot.notes] == [f"events in {NS}",
                                                                        "pods outside the namespace"]


def test_connect_errors_name_the_kubeconfig_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="no such kubeconfig file"):
        connect(tmp_path / "absent", None)
    bad = tmp_path / "bad"
    bad.write_text("- not a kubeconfig\n")
    with pytest.raises(ConfigError, match="is not a usable kubeconfig"):
        connect(bad, None)
    good = tmp_path / "good"
    good.write_text(yaml.safe_dump(CONFIG))
    with pytest.raises(ConfigError, match=r"has no context 'staging' \(it has: prod\)"):
        connect(good, "staging")
    client, server = connect(good, "prod")
    assert server == SERVER and isinstance(client, Client)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nowhere"))
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="no usable kubeconfig"):
        connect(None, None)


def test_an_unreachable_api_server_is_bad_input_not_a_bug(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    monkeypatch.setattr(fetch, "connect", lambda path, context: (
        Client(config=KubeConfig.from_dict(CONFIG), transport=httpx2.MockTransport(refuse)), SERVER))
    assert main(["diag"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {SERVER}: cannot be reached (ConnectError") and "Traceback" not in err


def _cli(monkeypatch: pytest.MonkeyPatch, objects: dict[str, Any]) -> None:
    monkeypatch.setattr(fetch, "connect", lambda path, context: (FakeApi(objects).client(), SERVER))


def test_cli_json_report_and_exit_status_of_a_broken_cluster(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    _cli(monkeypatch, crash_loop_objects())
    assert main(["diag", "-n", NS, "--output", "json"]) == 4
    report = json.loads(capsys.readouterr().out)
    assert report["firstBroken"] == "driver" and report["exitStatus"] == 4
    assert {"layer": "driver", "verdict": "broken"} in report["layers"]
    assert report["findings"][0]["check"] == "crash-loop"
    assert set(report["findings"][0]) == {"check", "layer", "severity", "subject", "what", "next"}


def test_cli_text_report(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _cli(monkeypatch, crash_loop_objects())
    assert main(["diag", "-n", NS]) == 4
    out = capsys.readouterr().out
    assert "first broken layer: driver" in out
    assert f"[error] pod/{NS}/nvidia-driver-daemonset-gpu-0:" in out
    assert f"next: kubectl logs -n {NS} nvidia-driver-daemonset-gpu-0 -c nvidia-driver-ctr --previous" in out
    assert "gpu-1: driver-ready ready, toolkit-ready ready" in out


def test_cli_degraded_is_three(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _cli(monkeypatch, cluster())  # the fake API's pending GPU pod: a warning
    assert main(["diag", "-n", NS]) == 3
    assert "device-plugin      degraded" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["diag", "--stuck-after", "-5"], ["diag", "--stuck-after", "soon"],
                                  ["diag", "--output", "yaml"], ["diag", "--kubeconfig", ""]])
def test_bad_command_lines_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "gpu-operator diag" in capsys.readouterr().err


def test_with_a_selector_only_gpu_pods_that_may_run_on_the_selected_nodes_are_kept() -> None:
    api = FakeApi(cluster())
    other_pool = dict(api.gpu_pod, metadata={"name": "elsewhere", "namespace": "ml"},
                      spec={**api.gpu_pod["spec"], "nodeSelector": {"kubernetes.azure.com/agentpool": "a100"}})
    bound_elsewhere = dict(api.gpu_pod, metadata={"name": "bound", "namespace": "ml"},
                           spec={**api.gpu_pod["spec"], "nodeName": "aks-a100-0"})
    here = dict(api.gpu_pod, spec={**api.gpu_pod["spec"], "nodeSelector": {"nvidia.com/gpu.present": "true"}})
    api.routes["/api/v1/pods"] = lambda: api._list("PodList", [other_pool, bound_elsewhere, here])
    kept = take_snapshot(api.client(), SERVER, NS, "nvidia.com/gpu.present=true").gpu_pods
    assert [p["metadata"]["name"] for p in kept] == ["trainer"]
    assert len(take_snapshot(api.client(), SERVER, NS).gpu_pods) == 3
