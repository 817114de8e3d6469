"""Operand tests cover the wiring of every agent the operands are designed for, shipped in this release or not."""

from __future__ import annotations

import pytest

from gpu_operator.config import agents


@pytest.fixture(autouse=True)
def every_agent_shipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agents, "SHIPPED_AGENTS", frozenset(agents.AGENT_OPERANDS))
