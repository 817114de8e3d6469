"""The GPU fault remediation's alerts (needs-human, a breaker holding, a failed rung) and dashboard row: rendered
with the operator controller, whose metrics they read, run through `promtool test rules`; left out with a note
naming what brings them back when no controller runs."""

from __future__ import annotations

from pathlib import Path

from gpu_operator.config import parse_config
from gpu_operator.render.monitoring.dashboard import panels
from gpu_operator.render.monitoring.left_out import monitoring_notes
from tests.render.monitoring.promtool_cases import expected, needs_promtool, promtool_test, render_rule, rules_of, series
from tests.support.agents import with_agents

WITH_CONTROLLER = with_agents({"cluster": {"prometheusOperator": True}})
REMEDIATION_ALERTS = {"GpuRemediationNeedsHuman", "GpuRemediationBreakerHolding", "GpuRemediationFailed"}


def test_rendered_with_the_controller_and_noted_without() -> None:
    assert REMEDIATION_ALERTS <= {r.get("alert") for r in rules_of(render_rule(WITH_CONTROLLER))}
    assert {p.row for p in panels(parse_config(WITH_CONTROLLER))} >= {"Remediation"}
    without = {"cluster": {"prometheusOperator": True}}
    assert not REMEDIATION_ALERTS & {r.get("alert") for r in rules_of(render_rule(without))}
    assert "Remediation" not in {p.row for p in panels(parse_config(without))}
    [note] = [n for n in monitoring_notes(parse_config(without)) if "GpuRemediation" in n]
    assert "no controller runs" in note and "agents.image or agents.build" in note


@needs_promtool
def test_the_alerts_fire_on_the_controllers_metrics(tmp_path: Path) -> None:
    rule = render_rule(WITH_CONTROLLER)
    job = {"job": "gpu-operator"}
    tests = [{
        "interval": "1m",
        "input_series": [
            series("gpu_operator_remediation_nodes", {**job, "state": "needs-human"}, "0 0 2x20"),
            series("gpu_operator_remediation_breaker_holding", {**job, "pool": "a100"}, "0 1x10 0x10"),
            series("gpu_operator_remediation_breaker_holding", {**job, "pool": ""}, "0x22"),
            series("gpu_operator_remediation_actions_total", {**job, "action": "reboot", "result": "failed"},
                   "0x5 1x17"),
            series("gpu_operator_remediation_actions_total", {**job, "action": "drain", "result": "success"},
                   "0 1 2 3 4 5x17"),
        ],
        "alert_rule_test": [
            {"eval_time": "1m", "alertname": "GpuRemediationNeedsHuman", "exp_alerts": []},
            {"eval_time": "3m", "alertname": "GpuRemediationNeedsHuman",
             "exp_alerts": [expected(rule, "GpuRemediationNeedsHuman", {**job, "state": "needs-human"}, value="2")]},
            {"eval_time": "4m", "alertname": "GpuRemediationBreakerHolding", "exp_alerts": []},
            {"eval_time": "8m", "alertname": "GpuRemediationBreakerHolding",
             "exp_alerts": [expected(rule, "GpuRemediationBreakerHolding", {"pool": "a100"})]},
            {"eval_time": "18m", "alertname": "GpuRemediationBreakerHolding", "exp_alerts": []},
            {"eval_time": "4m", "alertname": "GpuRemediationFailed", "exp_alerts": []},
            {"eval_time": "7m", "alertname": "GpuRemediationFailed",
             "exp_alerts": [expected(rule, "GpuRemediationFailed", {"action": "reboot"})]},
        ],
    }]
    promtool_test(tmp_path, rule, tests)
