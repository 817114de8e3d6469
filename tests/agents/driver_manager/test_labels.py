"""Pausing and restoring the operands' deploy labels, as NVIDIA's k8s-driver-manager spells the values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpu_operator.agents.driver_manager.labels import (
    PAUSED,
    is_paused,
    pause,
    paused_values,
    restored_values,
    unpause,
)

# Kubernetes label values: alphanumerics at both ends, `-_.` inside, at most 63 characters.
LABEL_VALUES = st.from_regex(r"\A([A-Za-z0-9]([A-Za-z0-9_.-]{0,20}[A-Za-z0-9])?)?\Z")


@pytest.mark.parametrize(("value", "paused"), [
    ("true", PAUSED),
    ("", ""),
    ("false", "false"),
    ("paused-for-mig-change", f"paused-for-mig-change_{PAUSED}"),
    ("pre-installed", f"pre-installed_{PAUSED}"),
    (PAUSED, PAUSED),
    (f"x_{PAUSED}", f"x_{PAUSED}"),
])
def test_pause(value: str, paused: str) -> None:
    assert pause(value) == paused


@pytest.mark.parametrize(("value", "restored"), [
    (PAUSED, "true"),
    (f"paused-for-mig-change_{PAUSED}", "paused-for-mig-change"),
    ("false", "false"),
    ("", ""),
    ("true", "true"),
    (f"{PAUSED}_odd", "odd"),
])
def test_unpause(value: str, restored: str) -> None:
    assert unpause(value) == restored


@given(LABEL_VALUES)
def test_pause_is_idempotent_and_undone_by_unpause(value: str) -> None:
    assert pause(pause(value)) == pause(value)
    assert unpause(pause(value)) == unpause(value)
    if not is_paused(value):
        assert unpause(pause(value)) == value


def test_only_labels_present_and_changing_are_written() -> None:
    labels = {"a": "true", "b": "false", "c": "", "d": PAUSED, "other": "true"}
    assert paused_values(labels, ["a", "b", "c", "d", "absent"]) == {"a": PAUSED}
    assert restored_values({**labels, "a": PAUSED}, ["a", "b", "c", "d", "absent"]) == {"a": "true", "d": "true"}
