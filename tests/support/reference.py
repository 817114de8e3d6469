"""Where the upstream reference data lives (`../shared/reference/data` beside the checkout).

Tests that compare against upstream files skip with a message when the folder is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["REPO_ROOT", "REFERENCE_DATA", "reference_file"]

REPO_ROOT = Path(__file__).resolve().parents[2]
REFERENCE_DATA = Path(os.environ.get("GPU_OPERATOR_REFERENCE_DATA", REPO_ROOT.parent / "shared" / "reference" / "data"))


def reference_file(relative: str) -> Path:
    """A reference data file, or skip the calling test when it is not available."""
    path = REFERENCE_DATA / relative
    if not path.exists():
        pytest.skip(f"upstream reference data not available: {path}")
    return path
