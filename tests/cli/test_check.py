"""`gpu-operator check`: the policies over a config's stack, a report by severity with the fix, exit 3 on mandatory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpu_operator.cli import main

BROKEN = {
    "operator": {
        "dcgmExporter": {"serviceMonitor": {"enabled": True, "interval": "5s", "scrapeTimeout": "10s"}},
        "devicePlugin": {"config": {"name": "plugin-config", "default": "shared"}},
    },
    "cluster": {"prometheusOperator": True},
    "configs": {"devicePlugin": {"shared": {"version": "v1", "sharing": {"timeSlicing": {
        "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}}},
}


def _write(tmp_path: Path, document: dict) -> Path:
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_broken_config_lists_each_violation_once_with_its_fix(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["check", "--production", "-f", str(_write(tmp_path, BROKEN))])  # with the LOW advisories
    out = capsys.readouterr().out
    assert status == 3
    assert out.count("scrape-timeout-within-interval: ServiceMonitor gpu-operator/nvidia-dcgm-exporter") == 1
    assert "fix: Lower serviceMonitor.scrapeTimeout or raise serviceMonitor.interval." in out
    assert out.count("time-slicing-fails-requests-over-one: ConfigMap gpu-operator/plugin-config") == 1
    assert out.index("MEDIUM") < out.index("LOW")


def test_json_report_and_a_clean_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "-f", str(_write(tmp_path, BROKEN)), "--output", "json"]) == 3
    report = json.loads(capsys.readouterr().out)
    names = [(v["policy"], v["enforcement"]) for v in report["violations"]]
    assert ("scrape-timeout-within-interval", "mandatory") in names
    assert ("time-slicing-fails-requests-over-one", "advisory") in names
    assert all(v["remediation"] for v in report["violations"])
    assert main(["check"]) == 0  # the built-in default: advisories only


def test_bad_input_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "-f", str(tmp_path / "missing.yaml")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_sarif_for_code_scanning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "-f", str(_write(tmp_path, BROKEN)), "--output", "sarif"]) == 3
    sarif = json.loads(capsys.readouterr().out)
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    [run] = sarif["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert len({rule["id"] for rule in rules}) == len(rules)
    levels = {result["ruleId"]: result["level"] for result in run["results"]}
    assert levels["scrape-timeout-within-interval"] == "error"
    assert levels["time-slicing-fails-requests-over-one"] == "warning"
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"]
        assert "Fix: " in result["message"]["text"]


def test_production_advises_bounded_driver_upgrades(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unlimited = _write(tmp_path, {"operator": {"driver": {"upgradePolicy": {"maxParallelUpgrades": 0}}}})
    assert main(["check", "-f", str(unlimited), "--output", "json"]) == 0
    assert "bounded-parallel-driver-upgrades" not in capsys.readouterr().out
    assert main(["check", "-f", str(unlimited), "--output", "json", "--production"]) == 0  # advisory: exit 0
    names = [v["policy"] for v in json.loads(capsys.readouterr().out)["violations"]]
    assert names.count("bounded-parallel-driver-upgrades") == 1


def test_a_local_chart_is_judged_as_the_policy_pack_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Chart object `check` judges has the chart argument `helm.v4.Chart` is given: the path as written, and
    no version (a local chart is installed as it is)."""
    import gpu_operator.policy

    (tmp_path / "charts" / "nfd").mkdir(parents=True)
    (tmp_path / "charts" / "nfd" / "Chart.yaml").write_text("name: node-feature-discovery\nversion: 0.19.0\n")
    config = tmp_path / "c.yaml"
    config.write_text("nfd:\n  chart: {path: charts/nfd}\n")
    judged: list[dict] = []
    real_check = gpu_operator.policy.check

    def recording_check(objects: list[dict], context: object) -> object:
        judged.extend(objects)
        return real_check(objects, context)  # type: ignore[arg-type]

    monkeypatch.setattr(gpu_operator.policy, "check", recording_check)
    assert main(["check", "-f", str(config)]) == 0
    [chart] = [obj for obj in judged if obj["kind"] == "Chart"]
    assert (chart["metadata"]["name"], chart["chart"], chart["version"]) == ("node-feature-discovery", "charts/nfd", "")


def test_check_and_render_say_remediation_and_upgrades_are_off_without_the_controller(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, {})  # NVIDIA's images alone
    for command in (["check", "-f", str(path)], ["render", "-f", str(path), "-o", str(tmp_path / "out")]):
        assert main(command) == 0
        notes = [line for line in capsys.readouterr().err.splitlines() if "no operator controller runs" in line]
        assert len(notes) == 1 and "GPU fault remediation and node-by-node driver upgrades" in notes[0]
    path.write_text(yaml.safe_dump({"agents": {"image": {"repository": "example.azurecr.io/agents", "tag": "1"}}}))
    assert main(["check", "-f", str(path)]) == 0
    assert "no operator controller runs" not in capsys.readouterr().err


def test_production_advises_bounded_remediation_restarts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = {"agents": {"image": {"repository": "example.azurecr.io/agents", "tag": "1"}},
                "remediation": {"mode": "enforce", "breaker": {"maxNodes": None, "maxPercent": None}}}
    assert main(["check", "--production", "-f", str(_write(tmp_path, document))]) == 0  # advisory
    out = capsys.readouterr().out
    assert "remediation-restarts-are-bounded: ConfigMap gpu-operator/gpu-operator-controller" in out
    assert "without a breaker" in out
