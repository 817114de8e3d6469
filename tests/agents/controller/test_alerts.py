"""The firing alerts a staged rollout's soak asks Prometheus for (`GET /api/v1/alerts`)."""

from __future__ import annotations

import httpx2
import pytest

from gpu_operator.agents.controller.alerts import ALERTS_PATH, AlertSource, firing_alert_names

#: The shape of Prometheus' answer (prometheus/web/api/v1 `alerts`: labels, annotations, state, activeAt, value).
ANSWER = {"status": "success", "data": {"alerts": [
    {"labels": {"alertname": "GPUXidCritical", "node": "gpu-0"}, "annotations": {}, "state": "firing",
     "activeAt": "2026-11-29T06:00:00Z", "value": "1e+00"},
    {"labels": {"alertname": "GPUHighTemperature"}, "annotations": {}, "state": "pending",
     "activeAt": "2026-11-29T06:00:00Z", "value": "9e+01"},
]}}


def test_only_firing_alerts_count() -> None:
    assert firing_alert_names(ANSWER) == {"GPUXidCritical"}
    assert firing_alert_names({"status": "success", "data": {"alerts": []}}) == frozenset()


@pytest.mark.parametrize("document", [{"status": "error", "error": "boom"}, {"status": "success", "data": {}}, []])
def test_an_answer_that_is_not_one_is_refused(document: object) -> None:
    with pytest.raises(ValueError):
        firing_alert_names(document)


def _source(handler: object, clock: object = None) -> AlertSource:
    return AlertSource("http://prometheus:9090/", transport=httpx2.MockTransport(handler),  # type: ignore[arg-type]
                       **({"clock": clock} if clock else {}))  # type: ignore[arg-type]


def test_the_source_asks_the_alerts_endpoint() -> None:
    asked: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        asked.append(str(request.url))
        return httpx2.Response(200, json=ANSWER)

    assert _source(answer).firing() == {"GPUXidCritical"}
    assert asked == [f"http://prometheus:9090{ALERTS_PATH}"]


@pytest.mark.parametrize("answer", [
    lambda request: httpx2.Response(503, text="unavailable"),
    lambda request: httpx2.Response(200, text="<html>not json</html>"),
    lambda request: (_ for _ in ()).throw(httpx2.ConnectError("refused", request=request)),
])
def test_an_unreadable_answer_is_unknown_not_nothing_firing(answer: object, caplog: pytest.LogCaptureFixture) -> None:
    assert _source(answer).firing() is None
    assert "no soak of the driver rollout ends" in caplog.text


def test_an_answer_or_a_failure_is_kept_for_the_ttl() -> None:
    """A controller's rounds come every few seconds in a rollout: Prometheus is asked at most every 10 s, and a
    hanging one costs a round its timeout at most that often."""
    asked, now = [], [0.0]

    def answer(request: httpx2.Request) -> httpx2.Response:
        asked.append(now[0])
        return httpx2.Response(503) if len(asked) == 1 else httpx2.Response(200, json=ANSWER)

    source = _source(answer, clock=lambda: now[0])
    assert source.firing() is None
    now[0] = 9.9
    assert source.firing() is None and asked == [0.0]
    now[0] = 10.0
    assert source.firing() == {"GPUXidCritical"} and asked == [0.0, 10.0]
