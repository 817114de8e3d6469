"""The GPU outage warning: a before_delete hook that runs in preview and says what is lost and how to proceed."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
from gpu_operator.components import outage_warning
from gpu_operator.components.outage_warning import OUTAGES, outage_message

from tests.support.pulumi_mocks import run_program


@pytest.mark.parametrize("resource_type", sorted(OUTAGES))
def test_every_message_names_the_resource_the_loss_and_the_way_forward(resource_type: str) -> None:
    message = outage_message(resource_type, "gpu-h100-agentpool", "urn:pulumi:prod::gpu::x")
    assert message.startswith("GPU outage ahead: gpu-h100-agentpool")
    assert resource_type in message and "urn:pulumi:prod::gpu::x" in message
    assert "revert" in message


def test_the_hook_runs_in_preview_before_a_delete_and_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    bindings: list[pulumi.ResourceHookBinding] = []
    run_program(lambda: bindings.append(outage_warning.outage_hook("gpu-h100")))
    [binding] = bindings
    [hook] = binding.before_delete or []
    assert hook.name == "gpu-h100-gpu-outage-warning"
    assert hook.opts is not None and hook.opts.on_dry_run  # a preview must show it, not only `pulumi up`
    assert not binding.before_create and not binding.before_update
    warnings: list[Any] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warnings.append(message))
    hook(pulumi.ResourceHookArgs(urn="urn:x", id="id", name="gpu-h100-agentpool",
                                 type="azure-native:containerservice:AgentPool", old_inputs={}, old_outputs={}))
    assert warnings == [outage_message("azure-native:containerservice:AgentPool", "gpu-h100-agentpool", "urn:x")]
