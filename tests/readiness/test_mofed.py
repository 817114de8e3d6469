"""MOFED readiness from the Network Operator's node labels: which nodes count, and when waiting ends."""

from __future__ import annotations

import pytest

from gpu_operator.readiness import (
    IB_NODE_LABEL,
    MOFED_WAIT_LABEL,
    MofedNotReady,
    mofed_readiness,
    wait_for_mofed,
)

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


def test_waiting_ends_when_the_last_node_turns_false() -> None:
    observations = iter([
        [_node("a", "true"), _node("b", "true")],
        [_node("a", "false"), _node("b", "true")],
        [_node("a", "false"), _node("b", "false")],
    ])
    clock = FakeClock()
    readiness = wait_for_mofed(lambda: next(observations), 2, 600, 10, clock=clock, sleep=clock.sleep)
    assert readiness.ready_nodes == ("a", "b")
    assert clock.sleeps == [10, 10]


def test_timeout_names_the_nodes_still_waiting() -> None:
    clock = FakeClock()
    with pytest.raises(MofedNotReady) as raised:
        wait_for_mofed(lambda: [_node("a", "false"), _node("gpu-7", "true")], 2, 25, 10,
                       clock=clock, sleep=clock.sleep)
    message = str(raised.value)
    assert "MOFED ready on 1 of 2" in message and "waiting: gpu-7" in message and "25 s" in message
    assert "mofedTimeoutSeconds" in message
    assert clock.sleeps == [10, 10, 5]  # never sleeps past the deadline


def test_a_failing_list_is_retried_until_the_deadline_then_raised() -> None:
    clock = FakeClock()
    calls = []

    def flaky() -> list[tuple[str, dict[str, str]]]:
        calls.append(clock.now)
        if len(calls) < 3:
            raise ConnectionError("apiserver restarting")
        return [_node("a", "false")]

    assert wait_for_mofed(flaky, 1, 600, 5, clock=clock, sleep=clock.sleep).ready
    clock = FakeClock()

    def down() -> list[tuple[str, dict[str, str]]]:
        raise ConnectionError("unreachable")

    with pytest.raises(ConnectionError):
        wait_for_mofed(down, 1, 12, 5, clock=clock, sleep=clock.sleep)
    assert clock.now == 12


# -- a MOFED version change: the label stays false while the previous driver runs -----------------------------------

from gpu_operator.readiness import DriverImage  # noqa: E402
from tests.support.fake_clock import FakeClock

NEW = DriverImage("nvcr.io/nvidia/mellanox", "doca-driver", "doca3.4.1-26.04-1.1.0.0-1")
OLD_IMAGE = "nvcr.io/nvidia/mellanox/doca-driver:doca3.4.0-26.04-0.8.6.0-0-ubuntu22.04-amd64"
NEW_IMAGE = "nvcr.io/nvidia/mellanox/doca-driver:doca3.4.1-26.04-1.1.0.0-1-ubuntu22.04-amd64"


def test_the_driver_image_matches_every_suffix_the_operator_builds() -> None:
    """Mellanox/network-operator v26.4.1 pkg/state/state_ofed.go `getMofedDriverImageName`: `mofedImageFormat`
    `<repo>/<image>:<version>-<os><ver>-<arch>`, `precompiledImageFormat` with the kernel before the OS, and
    `sha256ImageFormat` `<repo>/<image>@<version>`."""
    assert NEW.runs_in(NEW_IMAGE)
    precompiled = "doca3.4.1-26.04-1.1.0.0-1-5.15.0-1089-azure-ubuntu22.04-amd64"
    assert NEW.runs_in(f"nvcr.io/nvidia/mellanox/doca-driver:{precompiled}")
    assert DriverImage("r", "doca-driver", "sha256:" + "a" * 64).runs_in("r/doca-driver@sha256:" + "a" * 64)
    assert not NEW.runs_in(OLD_IMAGE)
    assert not NEW.runs_in("nvcr.io/nvidia/mellanox/doca-driver:doca3.4.1-26.04-1.1.0.0-10-ubuntu22.04-amd64")


def test_a_node_on_the_previous_mofed_is_still_waiting() -> None:
    """controllers/mofed_wait_labels.go `processOFEDPodsForWaitLabels` sets mofed.wait from the readiness of
    whatever driver pod runs on the node, and the driver DaemonSet updates OnDelete
    (manifests/state-ofed-driver/0050_ofed-driver-ds.yaml): right after a version change every label still says
    false."""
    nodes = [_node("a", "false"), _node("b", "false")]
    pods = [("a", NEW_IMAGE, True), ("b", OLD_IMAGE, True)]
    readiness = mofed_readiness(nodes, 2, pods, NEW)
    assert (readiness.ready_nodes, readiness.waiting_nodes, readiness.outdated_nodes) == (("a",), ("b",), ("b",))
    assert "still on the previous MOFED: b" in readiness.describe()
    # the new pod is there but its mofed-container not ready yet; a node whose pod is gone waits for the new one
    assert not mofed_readiness(nodes, 2, [("a", NEW_IMAGE, True), ("b", NEW_IMAGE, False)], NEW).ready
    assert not mofed_readiness(nodes, 2, [("a", NEW_IMAGE, True)], NEW).ready
    assert mofed_readiness(nodes, 2, [("a", NEW_IMAGE, True), ("b", NEW_IMAGE, True)], NEW).ready
    # no driver pods at all (host MOFED, or nothing scheduled yet): the label decides, as without a version
    assert mofed_readiness(nodes, 2, [], NEW).ready


def test_the_wait_after_a_version_change_ends_only_when_every_node_runs_it() -> None:
    nodes = [_node("a", "false"), _node("b", "false")]
    rounds = iter([
        [("a", OLD_IMAGE, True), ("b", OLD_IMAGE, True)],   # the policy changed; nothing upgraded yet
        [("a", NEW_IMAGE, False), ("b", OLD_IMAGE, True)],  # a's new driver compiling
        [("a", NEW_IMAGE, True), ("b", OLD_IMAGE, True)],
        [("a", NEW_IMAGE, True), ("b", NEW_IMAGE, True)],
    ])
    clock = FakeClock()
    readiness = wait_for_mofed(lambda: nodes, 2, 600, 10, clock=clock, sleep=clock.sleep,
                               list_pods=lambda: next(rounds), wanted=NEW)
    assert readiness.ready_nodes == ("a", "b")
    assert clock.sleeps == [10, 10, 10]
