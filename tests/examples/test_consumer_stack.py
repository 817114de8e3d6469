"""examples/consumer-stack: a separate project adding a GPU pool and the operator to an existing cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.reference import REPO_ROOT
from tests.support.stack_programs import StackRun, run_program_file

EXAMPLE = REPO_ROOT / "examples" / "consumer-stack"


@pytest.fixture(scope="module")
def run() -> StackRun:
    return run_program_file(EXAMPLE / "__main__.py", EXAMPLE / "Pulumi.dev.yaml", project="gpu-consumer")


def test_it_is_a_pulumi_python_project() -> None:
    project = yaml.safe_load((EXAMPLE / "Pulumi.yaml").read_text())
    assert project["name"] == "gpu-consumer"
    assert project["runtime"]["name"] == "python"
    assert Path(EXAMPLE / "requirements.txt").exists()


def test_adds_one_pool_to_the_existing_cluster_and_creates_no_cluster(run: StackRun) -> None:
    [pool] = run.recording.of_type("azure-native:containerservice:AgentPool")
    assert (pool.inputs["resourceGroupName"], pool.inputs["resourceName"]) == ("rg-platform-shared",
                                                                              "aks-platform-shared")
    assert pool.inputs["gpuProfile"] == {"driver": "None"}
    assert pool.inputs["nodeLabels"]["nvidia.com/mig.config"] == "all-3g.40gb"
    assert run.recording.of_type("azure-native:containerservice:ManagedCluster") == []


def test_the_operator_comes_after_the_pool_through_its_provider(run: StackRun) -> None:
    [pool] = run.recording.of_type("azure-native:containerservice:AgentPool")
    [provider] = run.recording.of_type("pulumi:providers:kubernetes")
    assert pool.urn in provider.dependencies
    objects = run.recording.of_type("kubernetes:")
    assert objects and all(r.provider.startswith(provider.urn + "::") for r in objects)
    assert run.recording.of_type("kubernetes:monitoring.coreos.com/v1:ServiceMonitor")


def test_outputs(run: StackRun) -> None:
    assert run.outputs == {
        "poolName": "a100mig",
        "nodeSelector": {"kubernetes.azure.com/agentpool": "a100mig"},
        "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
        "gpuResourceNames": ["nvidia.com/gpu"],
    }


def test_the_pool_is_protected_and_its_autoscaled_count_left_alone(run: StackRun) -> None:
    [pool] = run.recording.of_type("azure-native:containerservice:AgentPool")
    assert pool.protect
    assert pool.ignore_changes == ("count",)


def test_the_provider_signs_in_with_entra_id_never_the_admin_account(run: StackRun) -> None:
    [provider] = run.recording.of_type("pulumi:providers:kubernetes")
    kubeconfig = provider.inputs["kubeconfig"]["value"]
    assert "clusterAdmin" not in kubeconfig and "--login" in kubeconfig and "azurecli" in kubeconfig
    assert provider.inputs["clusterIdentifier"] == "aks:rg-platform-shared/aks-platform-shared"
