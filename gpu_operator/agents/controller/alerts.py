"""The alerts firing in a Prometheus, as a staged driver rollout's soak asks for them.

Prometheus' HTTP API lists the alerts its rules hold at `GET /api/v1/alerts` (`{"status": "success", "data":
{"alerts": [{"labels": {"alertname": ...}, "state": "firing" | "pending", ...}]}}`); only `firing` ones count, as
Alertmanager would be told of no other. An answer that cannot be had or read is not "nothing fires": it is
unknown (None), and the rollout's gate then lets no soak end until it can tell
(:func:`gpu_operator.upgrade.stages.evaluate`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
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
    """Reads the firing alerts of the Prometheus at `url` (a bounded request per call)."""

    def __init__(self, url: str, *, timeout: float = 5.0, transport: httpx2.BaseTransport | None = None) -> None:
        self._url = url.rstrip("/") + ALERTS_PATH
        self._client = httpx2.Client(timeout=timeout, transport=transport)

    def firing(self) -> frozenset[str] | None:
        """The firing alerts' names; None (logged) when Prometheus cannot be asked or its answer read."""
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
