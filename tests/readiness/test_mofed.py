"""MOFED readiness from the Network Operator's node labels: which nodes count, and when waiting ends."""

from __future__ import annotations

import pytest

from gpu_operator.readiness import IB_NODE_LABEL, MOFED_WAIT_LABEL, MofedNotReady, mofed_readiness, wait_for_mofed

IB = {IB_NODE_LABEL: "true"}


def _node(name: str, wait: str | None, ib: bool = True) -> tuple[str, dict[str, str]]:
    labels = dict(IB) if ib else {}
    if wait is not None:
        labels[MOFED_WAIT_LABEL] = wait
    return name, labels


@pytest.mark.parametrize(
    ("nodes", "expected", "ready", "waiting", "is_ready"),
    [
        ([_node("a", "false"), _node("b", "false")], 2, ("a", "b"), (), True),
        ([_node("a", "false"), _node("b", "true")], 2, ("a",), ("b",), False),
        ([_node("a", "false"), _node("b", None)], 1, ("a",), ("b",), False),  # not reached by the operator yet
        ([_node("a", "false")], 2, ("a",), (), False),  # the second IB node not labelled by NFD yet
        ([], 0, (), (), True),  # autoscaled IB pools at zero: nothing to wait for
        ([], 1, (), (), False),
        ([_node("cpu", "true", ib=False), _node("a", "false")], 1, ("a",), (), True),  # non-IB nodes ignored
        ([_node("a", "False")], 1, (), ("a",), False),  # the operator writes lower-case; anything else waits
    ],
)
def test_readiness(nodes, expected, ready, waiting, is_ready) -> None:
    readiness = mofed_readiness(nodes, expected)
    assert (readiness.ready_nodes, readiness.waiting_nodes, readiness.ready) == (ready, waiting, is_ready)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_waiting_ends_when_the_last_node_turns_false() -> None:
    observations = iter([
        [_node("a", "true"), _node("b", "true")],
        [_node("a", "false"), _node("b", "true")],
        [_node("a", "false"), _node("b", "false")],
    ])
    clock = _Clock()
    readiness = wait_for_mofed(lambda: next(observations), 2, 600, 10, clock=clock, sleep=clock.sleep)
    assert readiness.ready_nodes == ("a", "b")
    assert clock.sleeps == [10, 10]


def test_timeout_names_the_nodes_still_waiting() -> None:
    clock = _Clock()
    with pytest.raises(MofedNotReady) as raised:
        wait_for_mofed(lambda: [_node("a", "false"), _node("gpu-7", "true")], 2, 25, 10,
                       clock=clock, sleep=clock.sleep)
    message = str(raised.value)
    assert "MOFED ready on 1 of 2" in message and "waiting: gpu-7" in message and "25 s" in message
    assert "mofedTimeoutSeconds" in message
    assert clock.sleeps == [10, 10, 5]  # never sleeps past the deadline


def test_a_failing_list_is_retried_until_the_deadline_then_raised() -> None:
    clock = _Clock()
    calls = []

    def flaky() -> list[tuple[str, dict[str, str]]]:
        calls.append(clock.now)
        if len(calls) < 3:
            raise ConnectionError("apiserver restarting")
        return [_node("a", "false")]

    assert wait_for_mofed(flaky, 1, 600, 5, clock=clock, sleep=clock.sleep).ready
    clock = _Clock()

    def down() -> list[tuple[str, dict[str, str]]]:
        raise ConnectionError("unreachable")

    with pytest.raises(ConnectionError):
        wait_for_mofed(down, 1, 12, 5, clock=clock, sleep=clock.sleep)
    assert clock.now == 12
