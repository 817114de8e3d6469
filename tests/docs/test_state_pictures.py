"""The hand-drawn state diagrams name every state the code has, and no other: the driver upgrade's
(`gpu_operator.upgrade.State`, NVIDIA's `nvidia.com/gpu-driver-upgrade-state` values) and the GPU fault
remediation's (`gpu_operator.remediation.vocabulary.State`)."""

from __future__ import annotations

import re
from enum import Enum

import pytest

from gpu_operator.remediation.vocabulary import State as RemediationState
from gpu_operator.upgrade import State as UpgradeState
from tests.docs.runnable import DOCS

_DIAGRAM = re.compile(r"```mermaid\nstateDiagram-v2\n(.*?)```", re.DOTALL)
_NAMED = re.compile(r"^\s*(\w+): ([a-z-]+)$", re.MULTILINE)  # `upgrade_failed: upgrade-failed`
_STATE = re.compile(r"(?:^|-->)\s*(\w+)", re.MULTILINE)


def _states(page: str) -> set[str]:
    [diagram] = _DIAGRAM.findall((DOCS / page).read_text(encoding="utf-8"))
    names = dict(_NAMED.findall(diagram))
    ids = {match for match in _STATE.findall(diagram) if match != "*"} - {"stateDiagram"}
    return {names.get(state, state) for state in ids}


@pytest.mark.parametrize("page, states", [
    ("tasks/driver-upgrades.md", UpgradeState),
    ("tasks/gpu-failure.md", RemediationState),
], ids=["driver upgrade", "remediation"])
def test_the_diagram_names_every_state_of_the_code(page: str, states: type[Enum]) -> None:
    assert _states(page) == {state.value for state in states if state.value}
