"""The stack golden cases: every `stacks/Pulumi.<env>.yaml`, run through `stacks/__main__.py` under mocks."""

from __future__ import annotations

from pathlib import Path

from tests.support.stack_programs import stack_files

__all__ = ["STACK_ENVS", "STACK_GOLDEN_DIR", "stack_golden_path"]

STACK_GOLDEN_DIR = Path(__file__).resolve().parent / "stacks"

#: Environments with a stack file.
STACK_ENVS: tuple[str, ...] = tuple(stack_files())


def stack_golden_path(env: str) -> Path:
    return STACK_GOLDEN_DIR / f"{env}.yaml"
