"""`gpu-operator upgrade status` from the command line: text and JSON, the halt's exit status, --watch until the
rollout finishes, and clear errors for a cluster that cannot be read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gpu_operator.cli import build_parser, main
from gpu_operator.diag.upgrade_command import run_upgrade
from tests.agents.kube.fake_apiserver import FakeApiServer
from tests.diag.upgrade_cluster import NS, POOLS, config_map, event, node, pod, revision

ROLLING = {"c-0": "upgrade-done", "t-0": "validation-required", "t-1": "upgrade-required"}
FAILED = {**ROLLING, "t-0": "upgrade-failed"}


def _seed(server: FakeApiServer, states: dict[str, str]) -> None:
    for obj in [*(node(name, states) for name in POOLS), pod("c-0", "new"), pod("t-0", "new"), pod("t-1", "old"),
                revision(1, "old"), revision(2, "new"),
                event("c-0", "cordon-required", "2026-11-29T10:00:00Z"),
                event("c-0", "upgrade-done", "2026-11-29T10:05:00Z"),
                config_map("gpu-operator-controller", {"controller.json": json.dumps(
                    {"upgradePolicy": {"maxParallelUpgrades": 1}})})]:
        server.add(obj)


def test_text_and_json_of_a_rollout_in_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeApiServer() as server:
        _seed(server, ROLLING)
        kubeconfig = str(server.kubeconfig(tmp_path))
        assert main(["upgrade", "status", "--kubeconfig", kubeconfig, "-n", NS]) == 0
        text = capsys.readouterr().out
        assert main(["upgrade", "status", "--kubeconfig", kubeconfig, "-n", NS, "-o", "json"]) == 0
        report = json.loads(capsys.readouterr().out)
    assert "driver rollout: 1 of 3 node(s) on their newest driver, 0 failed" in text
    assert "observed per node: 5m00s, about 10m00s left" in text, "2 nodes left, one at a time, 5 minutes each"
    assert "train                  0/2  upgrade-required 1, validation-required 1" in text
    assert (report["nodes"], report["upgraded"], report["secondsLeft"]) == (3, 1, 600.0)


def test_a_failed_node_exits_3_with_its_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeApiServer() as server:
        _seed(server, FAILED)
        assert main(["upgrade", "status", "--kubeconfig", str(server.kubeconfig(tmp_path)), "-n", NS]) == 3
    assert "failed: t-0: the new driver pod restarted more than 10 times" in capsys.readouterr().out


def test_watch_prints_each_report_until_the_rollout_is_finished(tmp_path: Path) -> None:
    with FakeApiServer() as server:
        _seed(server, ROLLING)
        args = build_parser().parse_args(["upgrade", "status", "--kubeconfig", str(server.kubeconfig(tmp_path)),
                                          "-n", NS, "--watch", "--interval", "1", "-o", "json"])
        steps = iter([("t-0", "upgrade-done"), ("t-1", "upgrade-done")])

        def next_round(_seconds: float) -> None:  # the controller moves a node between two reports
            name, state = next(steps)
            server.update("nodes", name, None, lambda obj: obj["metadata"]["labels"].update(
                {"nvidia.com/gpu-driver-upgrade-state": state}))
            server.update("pods", f"nvidia-driver-daemonset-{name}", NS, lambda obj: obj["metadata"]["labels"].update(
                {"controller-revision-hash": "new"}))

        live = io.StringIO()
        assert run_upgrade(args, io.StringIO(), live=live, sleep=next_round) == 0
    reports = [json.loads(line) for line in live.getvalue().splitlines()]
    assert [r["upgraded"] for r in reports] == [1, 2, 3] and reports[-1]["finished"]


def test_an_unreachable_cluster_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeApiServer() as server:
        kubeconfig = str(server.kubeconfig(tmp_path))
    assert main(["upgrade", "status", "--kubeconfig", kubeconfig]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "cannot be reached" in err and "Traceback" not in err


def test_a_refused_read_names_the_grants_it_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeApiServer() as server:
        _seed(server, ROLLING)
        server.fail("GET", r"/apis/apps/v1/namespaces/gpu-operator/controllerrevisions", 403, reason="Forbidden")
        assert main(["upgrade", "status", "--kubeconfig", str(server.kubeconfig(tmp_path)), "-n", NS]) == 2
    err = capsys.readouterr().err
    assert "refused to list controllerrevisions in gpu-operator" in err and "upgrade status needs list" in err, err
