"""What the stacks program registers with Pulumi's Kubernetes provider passes the API server (server-side dry run).

The dry-run test of the render covers what `render` produces; this one covers what the components hand to the
engine: each `kubernetes:<group>/<version>:<Kind>` resource the program registers for `stacks/Pulumi.<env>.yaml`
(run under Pulumi's mocks, as the unit tests run it) is turned back into the object the provider would apply -
its inputs, with the apiVersion and kind of its type token - and dry-run applied. A component that passes a field
the render never had, in the wrong case or shape, fails here. Helm charts are not applied (their charts cannot be
pulled here; the upstream CRDs stand in for NFD's).
"""

from __future__ import annotations

from typing import Any

import pytest
from lightkube import Client

from tests.e2e.apply import KindTable, ensure_namespaces, server_side_apply
from tests.e2e.report import note
from tests.support.stack_programs import run_stack, stack_files

pytestmark = pytest.mark.e2e

#: Types that are not one Kubernetes object (the provider expands or renders them itself).
_NOT_ONE_OBJECT = ("kubernetes:helm.sh/", "kubernetes:yaml/", "kubernetes:kustomize/", "kubernetes:core/v1:ConfigMapList")


def _plain(value: Any) -> Any:
    """Inputs as the engine serialises them: whole-number floats back to integers, nulls dropped."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def registered_objects(env: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The Kubernetes objects the program registers for `env`, and the types left out."""
    objects, skipped = [], []
    for registration in run_stack(env).recording.registrations:
        if not registration.type.startswith("kubernetes:") or registration.type.startswith(_NOT_ONE_OBJECT):
            if registration.type.startswith("kubernetes:"):
                skipped.append(f"{registration.type} {registration.name}")
            continue
        _, group_version, kind = registration.type.split(":")
        api_version = group_version.removeprefix("core/")
        obj = {"apiVersion": api_version, "kind": kind, **_plain(registration.inputs)}
        obj.setdefault("metadata", {}).setdefault("name", registration.name)
        objects.append(obj)
    return objects, skipped


@pytest.mark.parametrize("env", sorted(stack_files()))
def test_every_object_the_stack_registers_passes_server_side_dry_run(env: str, admin: Client, kinds: KindTable) -> None:
    objects, skipped = registered_objects(env)
    assert objects, f"stacks/{env} registered no Kubernetes object"
    table = KindTable(custom=dict(kinds.custom))
    table.learn(objects)
    ensure_namespaces(admin, objects)
    failures = server_side_apply(admin, objects, table, dry_run=True, field_manager="e2e-stack")
    assert not failures, f"the API server refused {len(failures)} of {len(objects)} objects stacks/{env} registers:\n" + (
        "\n".join(map(str, failures))
    )
    note(f"stacks/{env}: {len(objects)} registered Kubernetes objects pass the dry run; not applied: "
         + (", ".join(skipped) if skipped else "none"))
