"""Booleans and durations spelled the way NVIDIA's Go programs accept them."""

from __future__ import annotations

import pytest

from gpu_operator.agents.values import parse_bool, parse_duration


@pytest.mark.parametrize("text", ["1", "t", "T", "TRUE", "true", "True"])
def test_true(text: str) -> None:
    assert parse_bool(text) is True


@pytest.mark.parametrize("text", ["0", "f", "F", "FALSE", "false", "False"])
def test_false(text: str) -> None:
    assert parse_bool(text) is False


@pytest.mark.parametrize("text", ["yes", "on", "", "tRuE"])
def test_not_booleans(text: str) -> None:
    with pytest.raises(ValueError):
        parse_bool(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("60s", 60.0), ("1m30s", 90.0), ("1.5h", 5400.0), ("300ms", 0.3), ("0", 0.0), ("2h45m", 9900.0), ("-5s", -5.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["60", "s", "1x", "1m 30s", "", "infinite"])
def test_not_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
