"""The image-pinned policy over what a config renders: moving tags are found, and the fix names the key to set."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import parse_config
from gpu_operator.policy import PolicyContext, check
from gpu_operator.render import render_operands
from gpu_operator.render.stack import stack_objects

AGENTS = {"agents": {"image": {"repository": "registry.example.com/gpu-operator-agents", "tag": "latest"}}}


def _messages(document: dict[str, Any]) -> list[str]:
    config = parse_config(document)
    findings = check(stack_objects(config, render_operands(config)), PolicyContext.from_config(config))
    return [f.violation.message for f in findings if f.policy.name == "image-pinned"]


@pytest.mark.parametrize(("document", "key"), [
    # driver.version: latest renders the tag latest-<os> (NVIDIA's driver tags carry the node OS after the version)
    ({"operator": {"driver": {"version": "latest"}}}, "operator.driver.version"),
    ({"operator": {"toolkit": {"version": "latest"}}}, "operator.toolkit.version"),
    (AGENTS, "agents.image.tag (or agents.image.digest)"),
])
def test_a_moving_tag_is_found_and_its_fix_names_the_key_that_sets_it(document: dict[str, Any], key: str) -> None:
    messages = _messages(document)
    assert messages, "no image-pinned finding"
    assert all(f"pin it with {key}" in message for message in messages), messages
    assert not any("operator.<section>" in message for message in messages)


def test_pinned_images_pass() -> None:
    assert _messages({"operator": {"driver": {"version": "595.91.07"}}}) == []
    assert _messages({"agents": {"image": {"repository": "registry.example.com/agents", "tag": "0.1.0"}}}) == []
