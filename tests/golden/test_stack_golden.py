"""Each stack's resources under mocks equal the reviewed golden list (regenerate with `make golden`)."""

from __future__ import annotations

import difflib

import pytest

from tests.golden.regenerate import stack_golden_text
from tests.golden.stack_cases import STACK_ENVS, stack_golden_path


@pytest.mark.parametrize("env", STACK_ENVS)
def test_stack_resources_match_golden(env: str) -> None:
    path = stack_golden_path(env)
    assert path.exists(), f"no golden file for stacks/Pulumi.{env}.yaml: run `make golden`"
    expected, actual = path.read_text(), stack_golden_text(env)
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True), "golden", "registered", n=2
        ))
        pytest.fail(f"stacks/Pulumi.{env}.yaml registers different resources than {path.name} "
                    f"(run `make golden` if the change is intended):\n{diff[:6000]}")


def test_there_are_stacks() -> None:
    assert {"dev", "prod"} <= set(STACK_ENVS)
