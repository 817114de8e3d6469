"""GpuNodePool under Pulumi mocks: the AgentPool's inputs, provider and parent, outputs, and refusals."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_azure_native as azure_native
import pytest
from gpu_operator.components import GpuNodePool
from gpu_operator.components.component_args import ComponentArgsError

from gpu_operator.config import ConfigError
from tests.support.azure_mocks import run_azure_program
from tests.support.pulumi_mocks import Recording

TOKEN = "gpu-operator:index:GpuNodePool"
STASH = "pulumi:index:Stash"
AGENT_POOL = "azure-native:containerservice:AgentPool"
AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "count": 2}
T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}
NO_OPERATOR_DRIVER = {"driver": {"enabled": False}, "toolkit": {"enabled": False}}


def program(document: dict[str, Any], pool: str, outputs: dict[str, Any] | None = None):
    def run() -> pulumi.Output[Any] | None:
        azure = azure_native.Provider("azure")
        node_pool = GpuNodePool("gpu", {
            "config": document, "pool": pool, "resource_group_name": "rg-gpu", "cluster_name": "aks-gpu",
            "azure_provider": azure,
        })
        if outputs is None:
            return None
        return pulumi.Output.all(
            node_pool.pool_name, node_pool.node_labels, node_pool.node_selector, node_pool.tolerations
        ).apply(lambda values: outputs.update(zip(["pool_name", "node_labels", "node_selector", "tolerations"], values)))
    return run


@pytest.fixture(scope="module")
def recording() -> Recording:
    return run_azure_program(program({"aks": AKS, "pools": [H100, T4]}, "h100"))


def test_agent_pool_inputs_when_the_operator_owns_the_driver(recording: Recording) -> None:
    pool = recording.of_type(AGENT_POOL)[0]
    inputs = pool.inputs
    assert inputs["gpuProfile"] == {"driver": "None"}
    assert (inputs["resourceGroupName"], inputs["resourceName"], inputs["agentPoolName"]) == ("rg-gpu", "aks-gpu", "h100")
    assert inputs["vmSize"] == "Standard_ND96isr_H100_v5"
    assert (inputs["count"], inputs["enableAutoScaling"]) == (2, False)
    assert (inputs["mode"], inputs["osType"], inputs["osSKU"]) == ("User", "Linux", "Ubuntu")
    assert inputs["scaleDownMode"] == "Delete"
    assert inputs["nodeTaints"] == ["sku=gpu:NoSchedule"]
    labels = inputs["nodeLabels"]
    assert labels["nvidia.com/gpu.present"] == "true"
    assert labels["nvidia.com/mig.config"] == "all-disabled"
    for operand in ("driver", "container-toolkit", "device-plugin", "gpu-feature-discovery", "dcgm-exporter",
                    "operator-validator", "mig-manager"):
        assert labels[f"nvidia.com/gpu.deploy.{operand}"] == "true"


def test_one_pool_under_its_component_with_the_explicit_provider(recording: Recording) -> None:
    components, pools = recording.of_type(TOKEN), recording.of_type(AGENT_POOL)
    assert len(components) == 1 and len(pools) == 1
    assert components[0].inputs == {"pool": "h100"}
    assert pools[0].parent == components[0].urn
    provider = recording.of_type("pulumi:providers:azure-native")[0]
    assert pools[0].provider.startswith(provider.urn + "::")
    assert pools[0].name == "gpu-agentpool"


def test_aks_managed_driver_installs_it() -> None:
    recording = run_azure_program(program({"aks": AKS, "pools": [{**T4, "gpuDriver": "aks"}],
                                           "operator": NO_OPERATOR_DRIVER}, "t4"))
    inputs = recording.of_type(AGENT_POOL)[0].inputs
    assert inputs["gpuProfile"] == {"driver": "Install"}
    # NVIDIA's value for a pre-installed driver (gpu-operator v26.7.0 controllers/state_manager.go): the driver
    # DaemonSet selects `=true`, so it never lands on these nodes
    assert inputs["nodeLabels"]["nvidia.com/gpu.deploy.driver"] == "pre-installed"


def test_sharing_mig_and_custom_taints() -> None:
    document = {
        "aks": AKS,
        "pools": [{**T4, "devicePluginConfig": "t4-shared-4", "taints": ["sku=gpu:NoSchedule", "team=ml:NoExecute"]},
                  {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "migConfig": "all-1g.10gb"}],
        "operator": {"devicePlugin": {"config": {"name": "plugin-config"}}},
        "configs": {"devicePlugin": {"t4-shared-4": {"sharing": {"timeSlicing": {"resources": [
            {"name": "nvidia.com/gpu", "replicas": 4}]}}}}},
    }
    t4 = run_azure_program(program(document, "t4")).of_type(AGENT_POOL)[0].inputs
    assert t4["nodeLabels"]["nvidia.com/device-plugin.config"] == "t4-shared-4"
    assert t4["nodeTaints"] == ["sku=gpu:NoSchedule", "team=ml:NoExecute"]
    a100 = run_azure_program(program(document, "a100")).of_type(AGENT_POOL)[0].inputs
    assert a100["nodeLabels"]["nvidia.com/mig.config"] == "all-1g.10gb"


def test_outputs() -> None:
    outputs: dict[str, Any] = {}
    run_azure_program(program({"aks": AKS, "pools": [{**T4, "taints": ["sku=gpu:NoSchedule", "spot:NoExecute"]}]},
                              "t4", outputs))
    assert outputs["pool_name"] == "t4"
    assert outputs["node_selector"] == {"kubernetes.azure.com/agentpool": "t4"}
    assert outputs["tolerations"] == [
        {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "spot", "operator": "Exists", "effect": "NoExecute"},
    ]
    assert outputs["node_labels"]["nvidia.com/gpu.present"] == "true"


@pytest.mark.parametrize("document, pool, paths", [
    ({"aks": AKS, "pools": [T4]}, "a100", {"pools"}),
    ({"aks": AKS, "pools": [{**T4, "migConfig": "all-1g.10gb"}]}, "t4", {"pools[0].migConfig"}),
    ({"aks": AKS, "pools": [{**T4, "autoscale": {"minCount": 3, "maxCount": 1}}]}, "t4", {"pools[0].autoscale"}),
    ({"aks": AKS, "pools": [{**T4, "name": "t4-pool"}]}, "t4-pool", {"pools[0].name"}),
])
def test_bad_pools_register_nothing(document: dict[str, Any], pool: str, paths: set[str]) -> None:
    recording = Recording()
    with pytest.raises(ConfigError) as error:
        run_azure_program(program(document, pool), recording=recording)
    assert {p.path for p in error.value.problems} == paths
    assert [r.type for r in recording.registrations] == ["pulumi:providers:azure-native"]


def test_pool_is_protected_and_guarded_by_the_outage_warning(recording: Recording) -> None:
    [pool] = recording.of_type(AGENT_POOL)
    assert pool.protect  # a replace deletes every GPU node first: the engine must refuse it
    assert pool.hooks == {}  # a delete hook would make the engine refuse a plain `pulumi destroy`
    [guard] = recording.of_type(STASH)
    assert guard.hooks == {"before_update": ("gpu-gpu-outage-warning",)}
    assert guard.urn in pool.dependencies
    identity = guard.inputs["input"]["resources"]["gpu-agentpool"]
    assert identity["vmSize"] == pool.inputs["vmSize"] and identity["name"] == pool.inputs["agentPoolName"]
    document = {"aks": {**AKS, "protect": False}, "pools": [T4]}
    assert not run_azure_program(program(document, "t4")).of_type(AGENT_POOL)[0].protect


def test_autoscaled_pools_leave_the_count_to_the_autoscaler(recording: Recording) -> None:
    assert recording.of_type(AGENT_POOL)[0].ignore_changes == ()  # fixed size: count is ours
    document = {"aks": AKS, "pools": [{**T4, "autoscale": {"minCount": 0, "maxCount": 3}}]}
    [pool] = run_azure_program(program(document, "t4")).of_type(AGENT_POOL)
    assert pool.inputs["enableAutoScaling"] is True
    assert pool.ignore_changes == ("count",)


def test_register_outputs(recording: Recording) -> None:
    [component] = recording.of_type(TOKEN)
    outputs = recording.outputs[component.urn]
    assert outputs["poolName"] == "h100"
    assert outputs["nodeSelector"] == {"kubernetes.azure.com/agentpool": "h100"}
    assert set(outputs) == {"poolName", "nodeLabels", "nodeSelector", "tolerations"}


def test_without_a_provider_the_error_names_the_argument() -> None:
    def run() -> None:
        GpuNodePool("gpu", {"config": {"aks": AKS, "pools": [T4]}, "pool": "t4",  # type: ignore[typeddict-item]
                            "resource_group_name": "rg-gpu", "cluster_name": "aks-gpu"})

    with pytest.raises(ComponentArgsError, match=r"GpuNodePool\('gpu'\): args\['azure_provider'\] is required"):
        run_azure_program(run)
