"""examples/stack-reference: a workload stack reading the GPU fleet's outputs through a StackReference."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_operator.render.aks.kubeconfig import with_kubelogin_mode

from tests.support.azure_mocks import EXEC_KUBECONFIG, AzureMocks
from tests.support.reference import REPO_ROOT
from tests.support.stack_programs import StackRun, run_program_file, run_stack

EXAMPLE = REPO_ROOT / "examples" / "stack-reference"
SECRET_SIGNATURE_KEY, SECRET_SIGNATURE = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"


@pytest.fixture(scope="module")
def run() -> StackRun:
    settings = yaml.safe_load((EXAMPLE / "Pulumi.prod.yaml").read_text())["config"]
    fleet = run_stack("prod")
    # the engine keeps a secret output secret through a StackReference
    mocks = AzureMocks(stack_outputs={settings["gpu-workloads:gpuStack"]: fleet.outputs},
                       secret_outputs=fleet.secret_outputs)
    return run_program_file(EXAMPLE / "__main__.py", EXAMPLE / "Pulumi.prod.yaml", project="gpu-workloads",
                            mocks=mocks)


def test_the_job_lands_on_the_chosen_pool_with_what_the_fleet_exported(run: StackRun) -> None:
    [job] = run.recording.of_type("kubernetes:batch/v1:Job")
    pod = job.inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.azure.com/agentpool": "h100mig"}
    assert pod["tolerations"] == [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert run.outputs["job"] == "cuda-vectoradd"
    assert set(run.outputs["fleetOutputs"]) == set(run_stack("prod").outputs)


def test_the_job_uses_a_provider_from_the_fleets_kubeconfig(run: StackRun) -> None:
    [provider] = run.recording.of_type("pulumi:providers:kubernetes")
    kubeconfig = provider.inputs["kubeconfig"]
    assert kubeconfig[SECRET_SIGNATURE_KEY] == SECRET_SIGNATURE  # never plain text in the consumer's state
    # the fleet's user credential (not its admin account), signing in as `az login` instead of a browser code
    assert kubeconfig["value"] == with_kubelogin_mode(EXEC_KUBECONFIG, "azurecli")
    assert "clusterAdmin" not in kubeconfig["value"] and "devicecode" not in kubeconfig["value"]
    [job] = run.recording.of_type("kubernetes:batch/v1:Job")
    assert job.provider.startswith(provider.urn + "::")


def _kubeconfig_mode_fleet(tmp_path: Path) -> StackRun:
    stack_file = tmp_path / "Pulumi.plain.yaml"
    stack_file.write_text("config:\n  gpu-operator:kubeconfig: fleet-admin-kubeconfig\n  gpu-operator:config: {}\n")
    return run_program_file(REPO_ROOT / "stacks" / "__main__.py", stack_file, project="gpu-operator")


def _consumer(tmp_path: Path, fleet: StackRun, settings: dict[str, str]) -> StackRun:
    stack_file = tmp_path / "Pulumi.plain.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {"gpu-workloads:gpuStack": "org/gpu-operator/plain", **settings}}))
    mocks = AzureMocks(stack_outputs={"org/gpu-operator/plain": fleet.outputs}, secret_outputs=fleet.secret_outputs)
    return run_program_file(EXAMPLE / "__main__.py", stack_file, project="gpu-workloads", mocks=mocks)


def test_a_kubeconfig_mode_fleet_is_read_whole_and_the_project_signs_in_with_its_own_credential(
    tmp_path: Path,
) -> None:
    fleet = _kubeconfig_mode_fleet(tmp_path)
    run = _consumer(tmp_path, fleet, {"gpu-workloads:kubeconfig": "workloads-kubeconfig"})
    assert set(run.outputs["fleetOutputs"]) == set(fleet.outputs)  # every output there, none null
    [provider] = run.recording.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"]["value"] == "workloads-kubeconfig"
    [job] = run.recording.of_type("kubernetes:batch/v1:Job")
    pod = job.inputs["spec"]["template"]["spec"]
    assert "nodeSelector" not in pod or pod["nodeSelector"] == {}
    assert pod["runtimeClassName"] == "nvidia"


def test_a_kubeconfig_mode_fleet_without_a_credential_of_its_own_says_how_to_give_one(tmp_path: Path) -> None:
    fleet = _kubeconfig_mode_fleet(tmp_path)
    with pytest.raises(Exception, match=r"exports no kubeconfig .*pulumi config set --secret kubeconfig"):
        _consumer(tmp_path, fleet, {})


def test_a_fleet_that_allocates_gpus_only_through_dra_is_named_as_such(tmp_path: Path) -> None:
    fleet = _kubeconfig_mode_fleet(tmp_path)
    fleet.outputs["gpuResourceNames"] = []  # the device plugin is off: DRA allocates every GPU
    with pytest.raises(Exception, match=r"no counted GPU resource .*ResourceClaim"):
        _consumer(tmp_path, fleet, {"gpu-workloads:kubeconfig": "k"})
