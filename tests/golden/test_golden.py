"""Rendered manifests equal the reviewed golden files (regenerate with `make golden`)."""

from __future__ import annotations

import difflib

import pytest

from gpu_operator.config import load_config
from gpu_operator.manifests import dump_all_yaml
from gpu_operator.render import render
from tests.golden.cases import CASES, golden_path


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_manifests_match_golden(case: str) -> None:
    expected = golden_path(case).read_text()
    actual = dump_all_yaml(render(load_config(CASES[case])))
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True), "golden", "rendered", n=2
        ))
        pytest.fail(f"{case}: rendered manifests differ from {golden_path(case).name} "
                    f"(run `make golden` if the change is intended):\n{diff[:6000]}")


def test_every_example_has_a_golden_file() -> None:
    missing = [case for case in CASES if not golden_path(case).exists()]
    assert not missing, f"no golden file for {missing}: run `make golden`"
