"""examples/stack-reference: a workload stack reading the GPU fleet's outputs through a StackReference."""

from __future__ import annotations

import pytest
import yaml

from tests.support.azure_mocks import AzureMocks
from tests.support.reference import REPO_ROOT
from tests.support.stack_programs import StackRun, run_program_file, run_stack

EXAMPLE = REPO_ROOT / "examples" / "stack-reference"


@pytest.fixture(scope="module")
def run() -> StackRun:
    settings = yaml.safe_load((EXAMPLE / "Pulumi.prod.yaml").read_text())["config"]
    fleet = run_stack("prod").outputs
    mocks = AzureMocks(stack_outputs={settings["gpu-workloads:gpuStack"]: fleet})
    return run_program_file(EXAMPLE / "__main__.py", EXAMPLE / "Pulumi.prod.yaml", project="gpu-workloads",
                            mocks=mocks)


def test_the_job_lands_on_the_chosen_pool_with_what_the_fleet_exported(run: StackRun) -> None:
    [job] = run.recording.of_type("kubernetes:batch/v1:Job")
    pod = job.inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.azure.com/agentpool": "h100mig"}
    assert pod["tolerations"] == [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert run.outputs == {"job": "cuda-vectoradd"}


def test_the_job_uses_a_provider_from_the_fleets_kubeconfig(run: StackRun) -> None:
    [provider] = run.recording.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"].startswith("apiVersion: v1")
    [job] = run.recording.of_type("kubernetes:batch/v1:Job")
    assert job.provider.startswith(provider.urn + "::")
