"""The GPU outage warning: a stash of the guarded resources' identities whose update hook warns, in preview too.

No delete hook: with one in the state, pulumi/pulumi `pkg/engine/destroy.go` (`newDestroySource`) refuses a plain
`pulumi destroy` ("You must run with the `--run-program` flag to use delete hooks during destroy").
"""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
from gpu_operator.components.outage_warning import OUTAGES, OutageGuard, outage_changes, outage_message

from tests.support.pulumi_mocks import run_program

DAEMONSET = "kubernetes:apps/v1:DaemonSet"
POOL = "azure-native:containerservice:AgentPool"


@pytest.mark.parametrize("resource_type", sorted(OUTAGES))
def test_every_message_names_the_resource_the_change_the_loss_and_the_way_forward(resource_type: str) -> None:
    message = outage_message(resource_type, "gpu-h100-agentpool", "changed: vmSize")
    assert message.startswith("GPU outage ahead: gpu-h100-agentpool")
    assert resource_type in message and "changed: vmSize" in message
    assert OUTAGES[resource_type][0] in message and "revert" in message


def _guard(resource_type: str, resources: dict[str, Any]) -> dict[str, Any]:
    return {"input": {"type": resource_type, "resources": resources}}


SELECTOR = {"matchLabels": {"app": "nvidia-driver-daemonset"}}
DRIVER = {"namespace": "gpu-operator", "name": "nvidia-driver-daemonset", "selector": SELECTOR}


@pytest.mark.parametrize("old, new, expected", [
    # unchanged identities (a new driver version changes the template, not the identity): nothing to say
    ({"gpu-ds": DRIVER}, {"gpu-ds": dict(DRIVER)}, []),
    # a new DaemonSet (a new OS) is no outage
    ({"gpu-ds": DRIVER}, {"gpu-ds": DRIVER, "gpu-ds-2": DRIVER}, []),
    ({"gpu-ds": DRIVER}, {"gpu-ds": {**DRIVER, "selector": {"matchLabels": {"app": "x"}}}},
     [("gpu-ds", "changed: selector")]),
    ({"gpu-ds": DRIVER, "gpu-ds-2": DRIVER}, {"gpu-ds-2": DRIVER}, [("gpu-ds", "removed from the program")]),
])
def test_changes_name_each_replaced_or_removed_resource(
    old: dict[str, Any], new: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert outage_changes(_guard(DAEMONSET, old), _guard(DAEMONSET, new)) == [
        outage_message(DAEMONSET, name, what) for name, what in expected
    ]


def test_a_removed_property_counts_as_a_change() -> None:
    old = {"p": {"vmSize": "Standard_ND96isr_H100_v5", "availabilityZones": ["1"]}}
    new = {"p": {"vmSize": "Standard_ND96isr_H100_v5"}}
    assert outage_changes(_guard(POOL, old), _guard(POOL, new)) == [
        outage_message(POOL, "p", "changed: availabilityZones")
    ]


def test_the_guard_is_a_stash_whose_update_hook_runs_in_preview_and_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    guards: list[OutageGuard] = []
    recording = run_program(lambda: guards.append(OutageGuard("gpu-driver", DAEMONSET, {"gpu-ds": DRIVER})))
    [guard] = guards
    [stash] = recording.of_type("pulumi:index:Stash")
    assert stash.name == "gpu-driver-gpu-outage-guard"
    assert stash.inputs["input"] == {"type": DAEMONSET, "resources": {"gpu-ds": DRIVER}}
    assert stash.hooks == {"before_update": ("gpu-driver-gpu-outage-warning",)}  # and never a delete hook
    assert guard.hook.opts is not None and guard.hook.opts.on_dry_run  # a preview must show it
    warnings: list[Any] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warnings.append(message))
    guard.hook(pulumi.ResourceHookArgs(
        urn="urn:x", id="id", name=stash.name, type="pulumi:index:Stash",
        old_inputs=_guard(DAEMONSET, {"gpu-ds": DRIVER}), new_inputs=_guard(DAEMONSET, {}),
    ))
    assert warnings == [outage_message(DAEMONSET, "gpu-ds", "removed from the program")]


def test_an_unknown_resource_type_is_refused() -> None:
    with pytest.raises(ValueError, match="no outage is known for kubernetes:v1:ConfigMap"):
        OutageGuard("x", "kubernetes:v1:ConfigMap", {})
