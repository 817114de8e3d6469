"""Kubernetes label selector text, parsed and matched as the API server does.

Cases follow k8s.io/apimachinery v0.34 pkg/labels/selector.go (`Parser.parse`, `NewRequirement`,
`Requirement.Matches`) and its selector_test.go `TestSelectorParse`.
"""

from __future__ import annotations

import pytest

from gpu_operator.facts.label_selector import parse_selector


@pytest.mark.parametrize(("text", "labels", "matches"), [
    ("", {}, True),
    ("app=web", {"app": "web"}, True),
    ("app==web", {"app": "db"}, False),
    ("app!=web", {}, True),
    ("app!=web", {"app": "web"}, False),
    ("app", {"app": ""}, True),
    ("!app", {"app": "x"}, False),
    ("!app", {}, True),
    ("tier in (web, db)", {"tier": "db"}, True),
    ("tier in (web,db)", {}, False),
    ("tier notin (web,db)", {}, True),
    ("tier notin (web,db)", {"tier": "web"}, False),
    ("app=web,tier in (a,b),!legacy", {"app": "web", "tier": "b"}, True),
    ("app=web,tier in (a,b),!legacy", {"app": "web", "tier": "b", "legacy": "1"}, False),
    ("example.com/role=gpu-batch", {"example.com/role": "gpu-batch"}, True),
    ("app=", {"app": ""}, True),
    ("x= ,z= ", {"x": "", "z": ""}, True),
    ("tier in ()", {"tier": ""}, True),
    ("tier in (a,)", {"tier": ""}, True),
    ("in in (in)", {"in": "in"}, True),  # `in` is the operator only where an operator goes
    ("x in (in, notin)", {"x": "notin"}, True),
    ("x>1", {"x": "2"}, True),
    ("x>1", {"x": "1"}, False),
    ("x>1", {"x": "two"}, False),
    ("x>1", {}, False),
    ("x>1,z<5", {"x": "3", "z": "-7"}, True),
])
def test_match(text: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_selector(text).matches(labels) is matches


@pytest.mark.parametrize("text", [
    "app=web,", "tier in (a,b", "tier in a,b)", "app=we b", "=web", "app=-x", "a,,b",
    # TestSelectorParse's bad strings
    "x=a||y=b", "x==a==b", "!x=a", "x<a",
    # NewRequirement: keys are qualified names, values label values
    "/app=web", "a/b/c=web", "Example.com/app=web", f"{'k' * 64}=v", f"app={'v' * 64}", "app in (a, -b)",
    "x>1.5", "x>", "x>9223372036854775808", "x>-1",
])
def test_malformed_selectors_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_selector(text)


@pytest.mark.parametrize("text", [f"{'k' * 63}=v", f"app={'v' * 63}", f"{'p' * 253}/k=v", "x>9223372036854775807"])
def test_keys_and_values_at_the_length_limits_are_accepted(text: str) -> None:
    assert len(parse_selector(text).requirements) == 1


def test_a_trailing_newline_does_not_join_a_value() -> None:
    """The lexer treats a newline as white space, so `app=web\n` is `app=web`, as in Kubernetes."""
    assert parse_selector("app=web\n").matches({"app": "web"})
