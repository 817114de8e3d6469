"""The node status gauges' current values and the scrape body made from them.

Probes update values as they learn something; every update re-renders the (small) body and publishes it, so a
scrape only hands out bytes. All gauges start at 0, the launch time is set once, `device_plugin_enabled` starts
at 1 (nothing says otherwise yet). A state gauge's change is the label value it now reports (`""`: none).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from gpu_operator.agents.exposition import (
    Family,
    Sample,
    Snapshot,
    SnapshotHolder,
    render_families,
)
from gpu_operator.agents.node_status_exporter.gauges import (
    DEVICE_PLUGIN_ENABLED,
    GAUGES,
    METRICS_READY,
    NODE_LABEL,
    STATE_GAUGES,
)

__all__ = ["NodeState"]

_GAUGE = "gauge"


class NodeState:
    """Gauge values of one node, published to `holder` on every change; thread-safe."""

    def __init__(self, node: str, holder: SnapshotHolder, started_at: float) -> None:
        self._labels = ((NODE_LABEL, node),)
        self._holder = holder
        self._values = {gauge.name: 0.0 for gauge in GAUGES}
        self._values[METRICS_READY] = float(int(started_at))
        self._values[DEVICE_PLUGIN_ENABLED] = 1.0
        self._states = {gauge.name: "" for gauge in STATE_GAUGES}
        self._lock = threading.Lock()
        self._publish()

    def values(self) -> Mapping[str, float]:
        with self._lock:
            return dict(self._values)

    def states(self) -> Mapping[str, str]:
        with self._lock:
            return dict(self._states)

    def update(self, changes: Mapping[str, float | str]) -> None:
        with self._lock:
            unknown = set(changes) - set(self._values) - set(self._states)
            if unknown:
                raise KeyError(f"not a node status gauge: {', '.join(sorted(unknown))}")
            for name, value in changes.items():
                if name in self._states:
                    self._states[name] = str(value)
                else:
                    self._values[name] = float(value)
            self._publish()

    def _publish(self) -> None:
        families = [Family(g.name, g.help, _GAUGE, [Sample(self._labels, self._values[g.name])]) for g in GAUGES]
        families += [
            Family(g.name, g.help, _GAUGE,
                   [Sample((*self._labels, ("state", self._states[g.name])), 1.0)] if self._states[g.name] else [])
            for g in STATE_GAUGES
        ]
        self._holder.publish(Snapshot(render_families(families)))
