"""Waiting for a subscription feature registration: polls until Registered, fails clearly past the timeout."""

from __future__ import annotations

import asyncio

import pytest
from gpu_operator.components.feature_registration import (
    FeatureNotRegisteredError,
    FeatureWait,
    wait_until_registered,
)

FEATURE = "Microsoft.ContainerService/AKSInfinibandSupport"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _wait(states: list[str | None], wait: FeatureWait, clock: FakeClock) -> str:
    remaining = list(states)

    async def lookup() -> str | None:
        return remaining.pop(0)

    # a loop of its own, never installed: asyncio.run would leave the thread without one for Pulumi's runtime
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(wait_until_registered(lookup, FEATURE, wait, clock.sleep, clock))
    finally:
        loop.close()


def test_polls_at_the_interval_until_registered() -> None:
    clock = FakeClock()
    state = _wait(["Registering", "Pending", "Registered"], FeatureWait(600, 20), clock)
    assert state == "Registered" and clock.sleeps == [20, 20]


def test_an_already_registered_feature_does_not_wait() -> None:
    clock = FakeClock()
    assert _wait(["Registered"], FeatureWait(600, 20), clock) == "Registered" and clock.sleeps == []


def test_past_the_timeout_it_fails_with_the_state_and_the_commands() -> None:
    clock = FakeClock()
    with pytest.raises(FeatureNotRegisteredError) as error:
        _wait(["Pending"] * 10, FeatureWait(60, 20), clock)
    message = str(error.value)
    assert "still Pending after 1 minutes" in message
    assert "az feature show --namespace Microsoft.ContainerService --name AKSInfinibandSupport" in message
    assert "az provider register --namespace Microsoft.ContainerService" in message
    assert clock.sleeps == [20, 20, 20]


def test_an_unknown_state_is_named_as_such() -> None:
    with pytest.raises(FeatureNotRegisteredError, match="still unknown"):
        _wait([None], FeatureWait(0, 1), FakeClock())
