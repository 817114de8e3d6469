"""Rendering the PrometheusRule for a test and running `promtool test rules` on it.

promtool is installed by the project's setup (tools/install-test-tools.sh); its absence is a setup failure, which
:data:`needs_promtool` reports as a skip with that fix.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.config import parse_config
from gpu_operator.render.monitoring import render_prometheus_rule

__all__ = [
    "AKS",
    "PROMTOOL",
    "expected",
    "needs_promtool",
    "node",
    "promtool_test",
    "render_rule",
    "rules_of",
    "series",
    "write_rules",
]

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool missing: run tools/install-test-tools.sh")

#: The AKS cluster a config with pools names.
AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}


def node(pool: str, index: int = 0) -> str:
    """The name AKS gives node `index` of agent pool `pool` (`aks-<pool>-<id>-vmss<instance>`)."""
    return f"aks-{pool}-12345678-vmss{index:06d}"


def render_rule(document: dict[str, Any]) -> dict[str, Any]:
    return render_prometheus_rule(parse_config(document))


def rules_of(rule: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for group in rule["spec"]["groups"] for item in group["rules"]]


def write_rules(rule: dict[str, Any], path: Path) -> Path:
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False), encoding="utf-8")
    return path


def series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    """One `input_series` entry."""
    return {"series": name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "values": values}


def expected(rule: dict[str, Any], alert: str, labels: dict[str, str], value: str | None = None) -> dict[str, Any]:
    """An expected firing alert: its labels, and its annotations with `$labels` (and `$value`) filled in as
    Prometheus does."""
    [item] = [r for r in rules_of(rule) if r.get("alert") == alert]

    def fill(text: str) -> str:
        for key, label in labels.items():
            text = text.replace(f"{{{{ $labels.{key} }}}}", label)
        return text if value is None else text.replace("{{ $value }}", value)

    return {"exp_labels": {"severity": item["labels"]["severity"], **labels},
            "exp_annotations": {key: fill(text) for key, text in item["annotations"].items()}}


def promtool_test(tmp_path: Path, rule: dict[str, Any], tests: list[dict[str, Any]]) -> None:
    """`promtool test rules` on these test groups against the rule; the run must pass."""
    assert PROMTOOL is not None
    write_rules(rule, tmp_path / "rules.yaml")
    document = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "case_test.yaml").write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    result = subprocess.run([PROMTOOL, "test", "rules", "case_test.yaml"], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
