"""The project's program (`stacks/__main__.py`) under mocks, for every `stacks/Pulumi.<env>.yaml`.

The resource lists are compared with goldens in tests/golden/test_stack_golden.py; here the facts the issue asks
for are checked directly: the pools each environment describes, the driver ownership, the outputs, providers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_operator.config import parse_config
from tests.support.azure_mocks import EXEC_KUBECONFIG, AzureMocks
from tests.support.pulumi_mocks import Recording
from tests.support.stack_programs import STACKS_DIR, StackRun, run_program_file, run_stack, stack_config, stack_files

AGENT_POOL = "azure-native:containerservice:AgentPool"
#: One output shape, with or without `aks`: a consumer stack must not break when the fleet changes shape.
OUTPUTS = {"kubeconfig", "resourceGroupName", "clusterName", "poolNames", "gpuResourceNames", "nodeSelectorLabels",
           "tolerations", "namespace", "runtimeClassName", "gpuNodeLabels"}


@pytest.fixture(scope="module", params=sorted(stack_files()))
def stack(request: pytest.FixtureRequest) -> tuple[str, StackRun]:
    return request.param, run_stack(request.param)


def pools(recording: Recording) -> dict[str, dict[str, Any]]:
    return {r.inputs["agentPoolName"]: r.inputs for r in recording.of_type(AGENT_POOL)}


def test_each_stack_file_is_a_valid_config_document() -> None:
    for env, path in stack_files().items():
        parse_config(json.loads(stack_config(path)["gpu-operator:config"]), source=f"Pulumi.{env}.yaml")


def test_every_stack_runs_and_exports_the_outputs(stack: tuple[str, StackRun]) -> None:
    _, run = stack
    assert set(run.outputs) == OUTPUTS
    # the user credential, kept secret: never the cluster-admin account
    assert run.outputs["kubeconfig"] == EXEC_KUBECONFIG
    assert run.secret_outputs == {"kubeconfig"}
    assert set(run.outputs["nodeSelectorLabels"]) == set(run.outputs["poolNames"]) == set(pools(run.recording))
    assert set(run.outputs["tolerations"]) == set(run.outputs["poolNames"])
    assert run.outputs["gpuNodeLabels"]["nvidia.com/gpu.present"] == "true"


def test_every_stack_previews_with_the_same_output_names(stack: tuple[str, StackRun]) -> None:
    env, _ = stack
    preview = run_program_file(STACKS_DIR / "__main__.py", stack_files()[env], project="gpu-operator",
                               mocks=AzureMocks(preview=True))
    assert set(preview.outputs) | preview.unknown_outputs == OUTPUTS
    document = json.loads(stack_config(stack_files()[env])["gpu-operator:config"])
    if document["aks"].get("create"):
        # a cluster that does not exist yet has no credentials to look up
        assert {"kubeconfig", "clusterName", "poolNames"} <= preview.unknown_outputs
    else:
        assert preview.outputs["kubeconfig"] == EXEC_KUBECONFIG and "kubeconfig" in preview.secret_outputs


def test_every_resource_has_an_explicit_provider(stack: tuple[str, StackRun]) -> None:
    _, run = stack
    for resource in run.recording.of_type("azure-native:") + run.recording.of_type("kubernetes:"):
        assert resource.provider, resource.name
        assert "pulumi:providers:" in resource.provider


def test_dev_is_one_small_t4_pool_with_time_slicing_and_the_operator_driver() -> None:
    run = run_stack("dev")
    assert list(pools(run.recording)) == ["t4"]
    t4 = pools(run.recording)["t4"]
    assert t4["vmSize"] == "Standard_NC4as_T4_v3"
    assert t4["gpuProfile"] == {"driver": "None"}
    assert t4["nodeLabels"]["nvidia.com/device-plugin.config"] == "t4-shared-4"
    [config_map] = [r for r in run.recording.of_type("kubernetes:core/v1:ConfigMap")
                    if r.inputs["metadata"]["name"] == "device-plugin-config"]
    assert "replicas: 4" in config_map.inputs["data"]["t4-shared-4"]
    assert run.recording.of_type("azure-native:containerservice:ManagedCluster")


def test_prod_is_two_h100_infiniband_pools_with_mig_on_one() -> None:
    run = run_stack("prod")
    prod = pools(run.recording)
    assert set(prod) == {"h100train", "h100mig"}
    assert all(p["vmSize"] == "Standard_ND96isr_H100_v5" for p in prod.values())
    assert all(p["gpuProfile"] == {"driver": "None"} for p in prod.values())
    assert prod["h100mig"]["nodeLabels"]["nvidia.com/mig.config"] == "all-1g.10gb"
    assert prod["h100train"]["nodeLabels"]["nvidia.com/mig.config"] == "all-disabled"
    assert run.recording.of_type("azure-native:features:SubscriptionFeatureRegistration")
    assert not run.recording.of_type("azure-native:containerservice:ManagedCluster")
    [driver] = [r for r in run.recording.of_type("kubernetes:apps/v1:DaemonSet")
                if r.inputs["metadata"]["name"].startswith("nvidia-driver")]
    assert {"name": "KERNEL_MODULE_TYPE", "value": "open"} in driver.inputs["spec"]["template"]["spec"]["containers"][0]["env"]


def test_without_an_aks_section_the_program_installs_the_operator_on_a_kubeconfig(tmp_path: Any) -> None:
    stack_file = tmp_path / "Pulumi.plain.yaml"
    stack_file.write_text(
        "config:\n"
        "  gpu-operator:kubeconfig: apiVersion-v1-kubeconfig\n"
        "  gpu-operator:config:\n"
        "    operator: {mig: {strategy: mixed}}\n"
    )
    run = run_program_file(STACKS_DIR / "__main__.py", stack_file, project="gpu-operator")
    assert set(run.outputs) == OUTPUTS
    assert {key: run.outputs[key] for key in ("kubeconfig", "resourceGroupName", "clusterName", "poolNames",
                                              "nodeSelectorLabels", "tolerations")} == {
        "kubeconfig": "", "resourceGroupName": "", "clusterName": "", "poolNames": [],
        "nodeSelectorLabels": {}, "tolerations": {},
    }
    # the engine drops null outputs (a consumer's require_output then fails): the shape holds no null
    assert [key for key, value in run.outputs.items() if value is None] == []
    assert "kubeconfig" in run.secret_outputs  # the same output type as with `aks`
    assert run.outputs["gpuNodeLabels"]["nvidia.com/gpu.deploy.driver"] == "true"
    assert run.recording.of_type("azure-native:") == []
    assert [r.name for r in run.recording.of_type("pulumi:providers:")] == ["cluster"]
    assert run.recording.named("gpu").type == "gpu-operator:index:GpuOperator"


def test_adopting_existing_objects_is_a_stack_setting(tmp_path: Any) -> None:
    stack_file = tmp_path / "Pulumi.adopt.yaml"
    stack_file.write_text(
        "config:\n"
        "  gpu-operator:kubeconfig: apiVersion-v1-kubeconfig\n"
        "  gpu-operator:adoptExistingObjects: 'true'\n"
        "  gpu-operator:config: {}\n"
    )
    run = run_program_file(STACKS_DIR / "__main__.py", stack_file, project="gpu-operator")
    [provider] = run.recording.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["upsertExistingObjects"] == "true"
    # after the takeover the stack owns the fields Helm set too: its next change must not conflict with "helm"
    assert provider.inputs["enablePatchForce"] == "true"


def test_without_aks_the_network_operator_and_dra_driver_come_when_the_config_asks(tmp_path: Any) -> None:
    stack_file = tmp_path / "Pulumi.plain.yaml"
    stack_file.write_text(
        "config:\n"
        "  gpu-operator:kubeconfig: apiVersion-v1-kubeconfig\n"
        "  gpu-operator:config:\n"
        "    network: {enabled: true, vfDeviceIds: ['101e']}\n"
        "    dra: {enabled: true, kubernetesVersion: '1.36'}\n"
        "    operator: {devicePlugin: {enabled: false}}\n"
    )
    run = run_program_file(STACKS_DIR / "__main__.py", stack_file, project="gpu-operator")
    network = run.recording.named("gpu-network")
    dra = run.recording.named("gpu-dra")
    operator = run.recording.named("gpu")
    assert (network.type, dra.type) == ("gpu-operator:index:NetworkOperator", "gpu-operator:index:DraDriver")
    # a component's depends_on reaches the engine as its children's URNs
    assert any("gpu-operator:index:NetworkOperator$" in urn for urn in operator.dependencies)  # MOFED first
    assert any("gpu-operator:index:GpuOperand$" in urn for urn in dra.dependencies)  # the plugin needs the driver
    plain = tmp_path / "Pulumi.bare.yaml"
    plain.write_text("config:\n  gpu-operator:kubeconfig: k\n  gpu-operator:config: {}\n")
    bare = run_program_file(STACKS_DIR / "__main__.py", plain, project="gpu-operator")
    assert bare.recording.of_type("gpu-operator:index:NetworkOperator") == bare.recording.of_type(
        "gpu-operator:index:DraDriver") == []
