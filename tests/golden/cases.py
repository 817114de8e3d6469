"""The golden cases: the built-in default stack and every config under examples/configs/."""

from __future__ import annotations

from pathlib import Path

from gpu_operator.config import BUILTIN_DEFAULT
from tests.support.reference import REPO_ROOT

__all__ = ["CASES", "GOLDEN_DIR", "golden_path"]

GOLDEN_DIR = Path(__file__).resolve().parent / "manifests"
EXAMPLES = REPO_ROOT / "examples" / "configs"

#: case name → config file
CASES: dict[str, Path] = {"default": BUILTIN_DEFAULT, **{p.stem: p for p in sorted(EXAMPLES.glob("*.yaml"))}}


def golden_path(case: str) -> Path:
    return GOLDEN_DIR / f"{case}.yaml"
