"""Suite-wide fixtures: the repo root on sys.path for `tests.support`, and the `gpu` marker's hooks.

Tests marked `gpu` run against the real NVIDIA driver. They skip only on a machine that shows no NVIDIA GPU (decided
from device nodes and libraries, not by the code under test); `GPU_REQUIRED=1` makes that, or any other skip of
a `gpu` test, a failure. See `tests/agents/gpu_gate.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.agents.gpu_gate import (  # after the root is on sys.path
    pytest_configure,
    pytest_runtest_makereport,
    pytest_runtest_setup,
)

__all__ = [
    "ROOT",
    "pytest_configure",
    "pytest_runtest_makereport",
    "pytest_runtest_setup",
]
