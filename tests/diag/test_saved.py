"""Saved snapshots: written by `--save`, judged by `--from` exactly as when taken, and a snapshot recorded from the
e2e tier's real API server (a driver pod in CrashLoopBackOff) replayed where no control plane runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpu_operator.cli import main
from gpu_operator.config import ConfigError
from gpu_operator.diag import Layer, Severity, Snapshot, diagnose
from gpu_operator.diag.saved import dump_snapshot, load_snapshot, read_snapshot, write_snapshot
from tests.diag.cluster import NOW, NS, crash_loop_objects, snapshot

RECORDED = Path(__file__).resolve().parent / "recorded" / "driver-crash-loop.json"


def test_the_recording_from_the_real_api_server_names_the_driver() -> None:
    recorded = read_snapshot(RECORDED)
    diagnosis = diagnose(recorded)
    assert diagnosis.first_broken is Layer.DRIVER and diagnosis.exit_status == 4
    errors = {(f.check, f.layer) for f in diagnosis.findings if f.severity is Severity.ERROR}
    assert errors == {("crash-loop", Layer.DRIVER), ("daemonset-not-ready", Layer.DRIVER)}
    crash = next(f for f in diagnosis.findings if f.check == "crash-loop")
    assert "6 restarts" in crash.what and "Back-off restarting failed container" in crash.what
    assert len(diagnosis.validations) == 3 and all(
        set(row.values()) == {"ready"} for row in diagnosis.validations.values())


def test_save_and_read_back_judge_the_same(tmp_path: Path) -> None:
    taken = Snapshot(namespace=NS, now=NOW, **crash_loop_objects())
    path = tmp_path / "snap.json"
    write_snapshot(taken, path)
    again = read_snapshot(path)
    assert dump_snapshot(again) == dump_snapshot(taken) and again.now == NOW
    assert diagnose(again) == diagnose(taken)


@pytest.mark.parametrize(("change", "problems"), [
    ({"kind": "Pod"}, ["kind: is not a saved diag snapshot"]),
    ({"version": 2}, ["version: is 2; this gpu-operator reads version 1"]),
    ({"now": "yesterday", "namespace": ""}, ["namespace: must be", "now: must be"]),
    ({"nodes": {"a": 1}, "pods": ["x"]}, ["nodes: must be a list", "pods: must be a list"]),
    ({"cluster_policy": [], "notes": [1]}, ["cluster_policy: must be", "notes: must be"]),
])
def test_bad_snapshot_documents_list_every_problem(change: dict[str, Any], problems: list[str]) -> None:
    document = {**dump_snapshot(snapshot()), **change}
    with pytest.raises(ConfigError) as raised:
        load_snapshot(document, "snap.json")
    found = [str(problem) for problem in raised.value.problems]
    assert len(found) == len(problems) and all(f.startswith(p) for f, p in zip(found, problems)), found


def test_cli_from_a_saved_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diag", "--from", str(RECORDED), "-o", "json"]) == 4
    report = json.loads(capsys.readouterr().out)
    assert report["firstBroken"] == "driver" and report["namespace"] == "diag-e2e"
    assert main(["diag", "--from", str(RECORDED), "-n", "diag-e2e"]) == 4
    assert "first broken layer: driver" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["--context", "prod"], "--context only apply when reading a cluster"),
    (["-l", "a=b", "--save", "x.json"], "--selector, --save only apply when reading a cluster"),
    (["-n", "gpu-operator"], "namespace: is 'diag-e2e', but --namespace asks for 'gpu-operator'"),
    (["--kubeconfig", "kc"], "not allowed with argument --from"),
])
def test_cli_from_refuses_live_only_options(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diag", "--from", str(RECORDED), *argv]) == 2
    assert message in capsys.readouterr().err


def test_cli_from_a_file_that_is_not_a_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.json").write_text("{not json")
    assert main(["diag", "--from", str(tmp_path / "x.json")]) == 2
    assert "is not JSON" in capsys.readouterr().err
    assert main(["diag", "--from", str(tmp_path / "absent.json")]) == 2
    assert "cannot be read" in capsys.readouterr().err
