"""Policy-in-the-loop on what the stack program registers: every Kubernetes resource of each stack, under mocks."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import load_config
from gpu_operator.policy import Enforcement, PolicyContext, check
from gpu_operator.policy.model import chart_object
from tests.support.stack_programs import run_stack, stack_files


def _objects(env: str) -> list[dict[str, Any]]:
    objects = []
    for registration in run_stack(env).recording.of_type("kubernetes:"):
        inputs = dict(registration.inputs)
        if registration.type == "kubernetes:helm.sh/v4:Chart":
            inputs = chart_object(registration.name, inputs.get("namespace"), inputs["chart"],
                                  inputs.get("version", ""), inputs.get("values") or {})
        objects.append(inputs)
    return objects


@pytest.mark.parametrize("env", sorted(stack_files()))
def test_every_stack_passes_the_mandatory_policies_under_mocks(env: str) -> None:
    objects = _objects(env)
    assert len(objects) > 20
    context = PolicyContext.from_config(load_config(stack_files()[env]), production=env == "prod")
    mandatory = [(f.policy.name, f.violation.resource, f.violation.message) for f in check(objects, context)
                 if f.policy.enforcement is Enforcement.MANDATORY]
    assert mandatory == []
