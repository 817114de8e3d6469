"""The upstream values files the importer tests read (from the shared reference data, never copied)."""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from tests.support.reference import reference_file

__all__ = ["V26", "V25", "AZURE", "chart_values"]

V26 = "helm-values/gpu-operator-v26.7.0-values.yaml"
V25 = "helm-values/gpu-operator-v25.10.1-values.yaml"
AZURE = "helm-values/aks-rdma-infiniband/gpu-operator-values.yaml"


@cache
def _load(relative: str) -> dict[str, Any]:
    return yaml.safe_load(reference_file(relative).read_text())


def chart_values(relative: str) -> dict[str, Any]:
    """A values file as a mapping (skips the test when the reference data is absent)."""
    return _load(relative)
