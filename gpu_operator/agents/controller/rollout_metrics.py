"""The staged driver rollout on the controller's `/metrics`: per stage, its nodes by state and its phase; whether
the rollout is halted; how long a soaking stage has left.

The series mirror the gate's last decision (:class:`~gpu_operator.upgrade.stages.StageDecision`), so they are
produced at each scrape by a custom collector rather than kept in gauges: a stage that left the plan, a phase a
stage is no longer in, or a rollout no longer configured leaves no stale series behind. Per stage the four states
add up to its nodes, as NVIDIA's cluster-wide `gpu_operator_nodes_upgrades_*` gauges do for the whole fleet:

* `upgraded`: on its driver DaemonSet's newest revision, `upgrade-done` or never labelled;
* `in_progress`: between admission and `upgrade-done` (cordon, drain, pod restart, validation, uncordon);
* `failed`: `upgrade-failed`;
* `pending`: the rest, waiting for an upgrade (`upgrade-required`, or out of date and not yet labelled).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from gpu_operator.upgrade.stages import StageDecision, StageReport

__all__ = ["ROLLOUT_METRIC_NAMES", "RolloutCollector", "stage_states"]

_NODES = ("gpu_operator_driver_rollout_stage_nodes",
          "Nodes of each stage of the staged driver rollout, by upgrade state")
_PHASE = ("gpu_operator_driver_rollout_stage_phase",
          "1 for each stage's current phase of the staged driver rollout "
          "(done, skipped, soaking, active, waiting, halted)")
_HALTED = ("gpu_operator_driver_rollout_halted", "1 while the staged driver rollout is halted, 0 otherwise")
_SOAK = ("gpu_operator_driver_rollout_soak_remaining_seconds",
         "Seconds left of the soak of each stage that is soaking")
#: Every series name the collector may produce (the dashboard's queries read them).
ROLLOUT_METRIC_NAMES = frozenset(name for name, _ in (_NODES, _PHASE, _HALTED, _SOAK))


def stage_states(stage: StageReport) -> dict[str, int]:
    """How many of the stage's nodes are in each state (`pending`, `in_progress`, `upgraded`, `failed`)."""
    counted = {"in_progress": stage.in_progress, "upgraded": stage.settled, "failed": len(stage.failed)}
    return {"pending": len(stage.nodes) - sum(counted.values()), **counted}


class RolloutCollector(Collector):
    """The rollout's series from the last decision recorded (none before one, or after `None`)."""

    def __init__(self) -> None:
        self._last: tuple[StageDecision, float] | None = None

    def record(self, decision: StageDecision | None, now: float) -> None:
        """Keep this round's decision (None: no rollout configured) and the round's time, for the next scrapes."""
        self._last = None if decision is None else (decision, now)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families without samples: the registry checks their names against the other metrics'."""
        yield from _families()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        last = self._last  # one read: the reconcile loop may record while this scrape runs
        if last is None:
            return
        decision, now = last
        nodes, phase, halted, soak = _families()
        for stage in decision.stages:
            for state, count in stage_states(stage).items():
                nodes.add_metric([stage.name, state], count)
            phase.add_metric([stage.name, stage.phase], 1)
            if stage.phase == "soaking" and stage.soak_until is not None:
                soak.add_metric([stage.name], max(0.0, stage.soak_until - now))
        halted.add_metric([], 1 if decision.halted else 0)
        yield from (nodes, phase, halted, soak)


def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
    return (GaugeMetricFamily(*_NODES, labels=["stage", "state"]),
            GaugeMetricFamily(*_PHASE, labels=["stage", "phase"]),
            GaugeMetricFamily(*_HALTED, labels=[]),
            GaugeMetricFamily(*_SOAK, labels=["stage"]))
