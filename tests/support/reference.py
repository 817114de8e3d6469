"""Where the upstream reference data lives (`../shared/reference/data` beside the checkout), and the published
Helm charts we install (`../shared/reference/charts`).

Tests that compare against upstream files skip with a message when the folder is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["REPO_ROOT", "REFERENCE_CHARTS", "REFERENCE_DATA", "reference_chart", "reference_file"]

REPO_ROOT = Path(__file__).resolve().parents[2]
REFERENCE_DATA = Path(os.environ.get("GPU_OPERATOR_REFERENCE_DATA", REPO_ROOT.parent / "shared" / "reference" / "data"))
#: The charts as published, `<name>-<version>.tgz`; a config names them relative to the checkout, as
#: `../shared/reference/charts/<file>`.
REFERENCE_CHARTS = REFERENCE_DATA.parent / "charts"


def reference_file(relative: str) -> Path:
    """A reference data file, or skip the calling test when it is not available."""
    path = REFERENCE_DATA / relative
    if not path.exists():
        pytest.skip(f"upstream reference data not available: {path}")
    return path


def reference_chart(file_name: str) -> Path:
    """A published chart (`node-feature-discovery-0.19.0.tgz`), or skip the calling test when it is absent."""
    path = REFERENCE_CHARTS / file_name
    if not path.exists():
        pytest.skip(f"reference chart not available: {path}")
    return path
