"""The controller's Prometheus metrics on `:8080/metrics`, under NVIDIA's names where NVIDIA has one.

NVIDIA's operator exports `gpu_operator_gpu_nodes_total`, `gpu_operator_reconciliation_*` (status 1 success, 0 not
ready, -2 an operator error) and the upgrade census `gpu_operator_auto_upgrade_enabled`,
`gpu_operator_nodes_upgrades_{in_progress,done,failed,available,pending}`; dashboards and alerts written for it
keep working. Ours adds the reconcile duration, the API writes, the actions that failed and the leader flag, and
the GPU fault remediation's (`gpu_operator_remediation_*`: nodes quarantined by pool and fault class, nodes by
state, actions by result, detection-to-cordon latency, breakers holding) and the staged driver rollout's
(`gpu_operator_driver_rollout_*`: per stage, nodes by state and the phase; the halt; the soak time left; see
:mod:`~gpu_operator.agents.controller.rollout_metrics`).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from gpu_operator.agents.controller.rollout_metrics import RolloutCollector
from gpu_operator.agents.controller.status import Census
from gpu_operator.remediation import RemediationPlan
from gpu_operator.upgrade.stages import StageDecision

__all__ = ["ControllerMetrics", "SUCCESS", "NOT_READY", "OPERATOR_ERROR"]

SUCCESS, NOT_READY, OPERATOR_ERROR = 1, 0, -2


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.gpu_nodes = Gauge("gpu_operator_gpu_nodes_total", "Number of nodes with GPUs", registry=r)
        self.status = Gauge("gpu_operator_reconciliation_status",
                            "1: reconciled and ready, 0: operands not ready, -2: the controller failed", registry=r)
        self.total = Counter("gpu_operator_reconciliation", "Reconciliations", registry=r)
        self.failed = Counter("gpu_operator_reconciliation_failed", "Failed reconciliations", registry=r)
        self.last_success = Gauge("gpu_operator_reconciliation_last_success_ts_seconds",
                                  "Time of the last successful reconciliation", registry=r)
        self.auto_upgrade = Gauge("gpu_operator_auto_upgrade_enabled", "1 if driver auto upgrade is enabled",
                                  registry=r)
        self.upgrades = {
            name: Gauge(f"gpu_operator_nodes_upgrades_{name}", text, registry=r)
            for name, text in (("in_progress", "Nodes whose driver is being upgraded"),
                               ("done", "Nodes whose driver upgrade is done"),
                               ("failed", "Nodes whose driver upgrade failed"),
                               ("available", "Nodes on which a driver upgrade can start now"),
                               ("pending", "Nodes waiting for a driver upgrade"))
        }
        self.duration = Histogram("gpu_operator_reconcile_duration_seconds", "Time of one reconcile round",
                                  buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10), registry=r)
        self.writes = Counter("gpu_operator_controller_writes", "Writes to the API server, by kind", ["kind"],
                              registry=r)
        self.failed_actions = Counter("gpu_operator_controller_failed_actions",
                                      "API calls that still failed after the client's retries, by kind; the next round "
                                      "tries again", ["kind"], registry=r)
        self.leader = Gauge("gpu_operator_controller_leader", "1 while this replica leads", registry=r)
        self.quarantined = Gauge("gpu_operator_remediation_quarantined_nodes",
                                 "GPU nodes quarantined now (needs-human included), by pool and fault class",
                                 ["pool", "fault_class"], registry=r)
        self.remediation_states = Gauge("gpu_operator_remediation_nodes", "GPU nodes by remediation state",
                                        ["state"], registry=r)
        self.remediations = Counter("gpu_operator_remediation_actions", "Remediation actions started and ended, "
                                    "by action and result (started, success, failed)", ["action", "result"],
                                    registry=r)
        self.cordon_latency = Histogram("gpu_operator_remediation_detection_to_cordon_seconds",
                                        "From a fault's Node condition to the node's quarantine",
                                        buckets=(0.25, 0.5, 1, 2, 5, 10, 30, 60, 300), registry=r)
        self.breaker_holding = Gauge("gpu_operator_remediation_breaker_holding",
                                     "1 while a breaker holds new quarantines back (pool \"\": the cluster's)",
                                     ["pool"], registry=r)
        self.breaker_deferred = Gauge("gpu_operator_remediation_breaker_deferred_nodes",
                                      "Nodes a holding breaker defers now", ["pool"], registry=r)
        self.rollout = RolloutCollector()
        r.register(self.rollout)

    def record(self, summary: Census, auto_upgrade: bool, now: float) -> None:
        self.gpu_nodes.set(summary.gpu_nodes)
        self.auto_upgrade.set(1 if auto_upgrade else 0)
        for name, value in (("in_progress", summary.in_progress), ("done", summary.done),
                            ("failed", summary.failed), ("available", summary.available),
                            ("pending", summary.pending)):
            self.upgrades[name].set(value)
        self.total.inc()
        self.status.set(SUCCESS if summary.operands_ready else NOT_READY)
        self.last_success.set(now)

    def record_remediation(self, plan: RemediationPlan) -> None:
        """The remediation's gauges as the plan leaves the nodes, and what it started, ended and quarantined."""
        self.quarantined.clear()
        for (pool, fault_class), count in plan.metrics.quarantined.items():
            self.quarantined.labels(pool, fault_class).set(count)
        self.remediation_states.clear()
        for state in sorted({node.after.value for node in plan.nodes.values()}):
            self.remediation_states.labels(state or "healthy").set(
                sum(node.after.value == state for node in plan.nodes.values()))
        for action in plan.metrics.started:
            self.remediations.labels(action, "started").inc()
        for action, result in plan.metrics.finished:
            self.remediations.labels(action, result).inc()
        for seconds in plan.metrics.cordon_latency_seconds:
            self.cordon_latency.observe(seconds)
        self.breaker_holding.clear()
        self.breaker_deferred.clear()
        for breaker in plan.metrics.breakers:
            self.breaker_holding.labels(breaker.pool).set(1 if breaker.holding else 0)
            self.breaker_deferred.labels(breaker.pool).set(breaker.deferred)

    def record_rollout(self, decision: StageDecision | None, now: float) -> None:
        """The staged driver rollout as the gate decided this round; None (no rollout configured) clears it."""
        self.rollout.record(decision, now)
