"""The alerts firing in a Prometheus, as a staged driver rollout's soak asks for them.

Prometheus' HTTP API lists the alerts its rules hold at `GET /api/v1/alerts` (`{"status": "success", "data":
{"alerts": [{"labels": {"alertname": ...}, "state": "firing" | "pending", ...}]}}`); only `firing` ones count, as
Alertmanager would be told of no other. An answer that cannot be had or read is not "nothing fires": it is
unknown (None), and the rollout's gate then lets no soak end until it can tell
(:func:`gpu_operator.upgrade.stages.evaluate`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx2

__all__ = ["ALERTS_PATH", "AlertSource", "firing_alert_names"]

_LOG = logging.getLogger(__name__)
ALERTS_PATH = "/api/v1/alerts"


def firing_alert_names(document: Any) -> frozenset[str]:
    """The names of the firing alerts in an `/api/v1/alerts` answer; ValueError when it is not one."""
    if not isinstance(document, Mapping) or document.get("status") != "success":
        raise ValueError(f"not a successful Prometheus API answer: {str(document)[:200]}")
    alerts = (document.get("data") or {}).get("alerts")
    if not isinstance(alerts, list):
        raise ValueError("the answer has no data.alerts list")
    return frozenset(str(alert["labels"]["alertname"]) for alert in alerts
                     if isinstance(alert, Mapping) and alert.get("state") == "firing"
                     and isinstance(alert.get("labels"), Mapping) and "alertname" in alert["labels"])


class AlertSource:
    """Reads the firing alerts of the Prometheus at `url`: a bounded request, its answer (or its failure) kept for
    `ttl` seconds, so a controller's busy rounds ask Prometheus at most that often and a Prometheus that hangs
    costs a round `timeout` seconds at most once per `ttl`."""

    def __init__(self, url: str, *, timeout: float = 3.0, ttl: float = 10.0,
                 transport: httpx2.BaseTransport | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._url = url.rstrip("/") + ALERTS_PATH
        self._client = httpx2.Client(timeout=timeout, transport=transport)
        self._ttl, self._clock = ttl, clock
        self._kept: tuple[float, frozenset[str] | None] | None = None

    def firing(self) -> frozenset[str] | None:
        """The firing alerts' names; None (logged) when Prometheus cannot be asked or its answer read."""
        now = self._clock()
        if self._kept is not None and now - self._kept[0] < self._ttl:
            return self._kept[1]
        self._kept = (now, self._ask())
        return self._kept[1]

    def _ask(self) -> frozenset[str] | None:
        try:
            response = self._client.get(self._url)
            response.raise_for_status()
            return firing_alert_names(response.json())
        except (httpx2.HTTPError, ValueError) as error:
            _LOG.warning("cannot read the firing alerts from %s (%s): no soak of the driver rollout ends until "
                         "they can be read", self._url, error)
            return None

    def close(self) -> None:
        self._client.close()
