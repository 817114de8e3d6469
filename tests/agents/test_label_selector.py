"""`DRAIN_POD_SELECTOR_LABEL`: Kubernetes label selector text, parsed and matched as the API server does."""

from __future__ import annotations

import pytest

from gpu_operator.agents.label_selector import parse_selector


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
])
def test_match(text: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_selector(text).matches(labels) is matches


@pytest.mark.parametrize("text", ["app=web,", "tier in (a,b", "tier in a,b)", "app=we b", "=web", "app=-x", "a,,b"])
def test_malformed_selectors_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_selector(text)
