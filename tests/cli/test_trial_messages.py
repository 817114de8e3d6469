"""The command-line messages a new user's trial stumbled on (issue 29, point 7), each said once and plainly.

* an imported value that only the operator controller carries out is noted as imported, not "not imported:
  imported: ...";
* `check` counts its violations in English and gives each policy's fix once, not once per violation;
* an unknown key names the ClusterPolicy CRD only under `operator`;
* a render without pools or `cluster.operatingSystems` says which node OS its driver image is built for;
* `diag` does not show a validation file as `ready` beside a broken layer on the same node without saying that
  the file is from the validator's last run;
* a values file that pins some operand versions is told the others are another release's.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from gpu_operator.cli import main
from gpu_operator.config import parse_config
from gpu_operator.config.errors import problems_from_validation_error
from gpu_operator.diag import diagnose
from gpu_operator.diag.report import text_report
from gpu_operator.policy.report import format_text
from gpu_operator.render.assumed_os import assumed_os_notes
from tests.diag.cluster import NOW, NS, crash_loop_objects
from gpu_operator.diag.snapshot import Snapshot


def _import(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> str:
    values = tmp_path / "values.yaml"
    values.write_text(text, encoding="utf-8")
    assert main(["import-values", str(values)]) == 0
    return capsys.readouterr().err


def test_an_imported_upgrade_policy_is_noted_as_imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _import(tmp_path, capsys, "driver:\n  upgradePolicy:\n    maxParallelUpgrades: 2\n")
    assert "note: driver.upgradePolicy: imported as operator.driver.upgradePolicy, but only the operator " \
           "controller carries it out" in err
    assert "not imported" not in err


def test_an_ignored_value_is_still_noted_as_not_imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _import(tmp_path, capsys, "nameOverride: gpu\n")
    assert "note: nameOverride not imported: " in err


def _production_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    config = tmp_path / "config.yaml"
    config.write_text("operator: {driver: {upgradePolicy: {maxParallelUpgrades: 1}}}\n", encoding="utf-8")
    assert main(["check", "-f", str(config), "--production"]) == 0
    return capsys.readouterr().out


def test_check_gives_each_policys_fix_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _production_check(tmp_path, capsys)
    findings = [line.split("] ", 1)[1].split(":", 1)[0] for line in out.splitlines() if line.startswith("  [")]
    fixes = [line for line in out.splitlines() if line.strip().startswith("fix:")]
    assert findings.count("operand-resource-requests") > 1
    assert len(fixes) == len(set(fixes)) == len(set(findings))  # one fix per policy, however many violations
    assert out.splitlines()[-1].endswith(
        f": {len(findings)} violations of {len(set(findings))} policies, none mandatory")


def test_check_counts_in_english() -> None:
    from gpu_operator.policy import check
    from gpu_operator.policy.context import PolicyContext
    from gpu_operator.render import render_operands
    from gpu_operator.render.stack import stack_objects

    config = parse_config({"operator": {"dcgmExporter": {"image": "nvcr.io/nvidia/k8s/dcgm-exporter:latest",
                                                         "repository": "", "version": ""}}})
    findings = check(stack_objects(config, render_operands(config)), PolicyContext.from_config(config))
    pinned = [f for f in findings if f.policy.name == "image-pinned"]
    assert len(pinned) == 1
    assert format_text(pinned, 10).splitlines()[-1] == \
           "10 Kubernetes objects: 1 violation of 1 policy, it mandatory (exit 3)"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    known: int = 0


def test_an_unknown_key_names_the_clusterpolicy_crd_only_under_operator() -> None:
    with pytest.raises(ValidationError) as raised:
        _Section.model_validate({"bogus": 1})
    [outside] = problems_from_validation_error(raised.value, ("monitoring",))
    [inside] = problems_from_validation_error(raised.value, ("operator", "driver"))
    assert outside.message == "unknown key (check the spelling; keys are camelCase)"
    assert inside.message == "unknown key (check the spelling; keys are camelCase as in the ClusterPolicy CRD)"


def test_a_render_without_pools_names_the_node_os_it_assumes() -> None:
    [note] = assumed_os_notes(parse_config({}))
    assert "no pools and no cluster.operatingSystems" in note and "ubuntu 22.04" in note
    listed = {"cluster": {"operatingSystems": [{"id": "ubuntu", "versionId": "22.04"}]}}
    assert assumed_os_notes(parse_config(listed)) == []
    assert assumed_os_notes(parse_config({"operator": {"driver": {"enabled": False}}})) == []


def test_render_prints_the_assumed_os(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("namespace: gpu-operator\n", encoding="utf-8")
    assert main(["render", "-f", str(config)]) == 0
    assert "note: no pools and no cluster.operatingSystems: the driver image is built for the default node OS, " \
           "ubuntu 22.04" in capsys.readouterr().err


def test_diag_says_a_ready_file_predates_the_broken_layer_on_its_node() -> None:
    objects = copy.deepcopy(crash_loop_objects())  # gpu-0's driver container crash-loops; its validator ran before
    report = text_report(diagnose(Snapshot(namespace=NS, now=NOW, **objects)))
    [gpu0] = [line for line in report.splitlines() if line.startswith("  gpu-0: ")]
    [gpu1] = [line for line in report.splitlines() if line.startswith("  gpu-1: ")]
    assert "driver-ready ready (when the validator ran; the driver layer fails on this node now, see above)" in gpu0
    assert gpu1 == "  gpu-1: driver-ready ready, toolkit-ready ready, cuda-ready ready, plugin-ready ready"


def test_values_pinning_some_operands_are_told_the_others_are_this_releases(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _import(tmp_path, capsys, 'driver:\n  version: "550.127.08"\ntoolkit:\n  version: v1.16.2-ubuntu20.04\n')
    assert "note: the values pin toolkit v1.16.2-ubuntu20.04; every other operand takes the GPU Operator v26.7.0 " \
           "chart's version (devicePlugin v0.20.0, " in err


def test_a_pinned_driver_alone_mixes_no_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "the values pin" not in _import(tmp_path, capsys, 'driver:\n  version: "550.127.08"\n')
