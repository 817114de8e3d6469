"""GpuCluster benchmarks under Pulumi mocks (`make bench`); numbers are reported, never asserted.

* the prod stack (`stacks/Pulumi.prod.yaml` through `stacks/__main__.py`), beside a baseline registering the same
  number of plain ConfigMaps in the same run: the ratio is the cost of our components over Pulumi's own;
* GpuCluster with 1, 5, 10 and 20 ND H100 v5 pools: how the cost grows with pools (each pool adds an AgentPool
  and its component; the operator's objects stay the same), beside the same numbers of bare AgentPools: an
  azure-native resource carries one type alias per API version (110 for AgentPool), which the SDK resolves at
  registration, and that dominates a pool's cost under mocks;
* the pure parts a pool adds: validating and deriving the config, rendering the agent pool properties.

`extra_info` of each benchmark carries the resource count and the mean cost per registered resource.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_azure_native as azure_native
import pulumi_kubernetes as k8s
import pytest
from gpu_operator.components import GpuCluster
from pulumi_azure_native import containerservice

from gpu_operator.config import parse_config
from gpu_operator.render.aks import agent_pool_resources
from tests.support.azure_mocks import run_azure_program
from tests.support.stack_programs import run_stack, stack_config, stack_files

PROD_DOCUMENT: dict[str, Any] = json.loads(stack_config(stack_files()["prod"])["gpu-operator:config"])
PROD_RESOURCES = len(run_stack("prod").recording.registrations)
POOL_COUNTS = (1, 5, 10, 20)


def _document(pools: int) -> dict[str, Any]:
    pool = {"vmSize": "Standard_ND96isr_H100_v5", "count": 2, "availabilityZones": ["1"]}
    return {**PROD_DOCUMENT, "pools": [{"name": f"h100p{index}", **pool} for index in range(pools)]}


def _per_resource(benchmark: Any, resources: int) -> None:
    mean = benchmark.stats.stats.mean
    benchmark.extra_info.update(resources=resources, per_resource_ms=round(mean / resources * 1000, 3))


def test_prod_stack(benchmark: Any) -> None:
    run = benchmark.pedantic(run_stack, args=("prod",), rounds=5, iterations=1, warmup_rounds=1)
    assert len(run.recording.registrations) == PROD_RESOURCES
    _per_resource(benchmark, PROD_RESOURCES)


def _baseline_program() -> None:
    provider = k8s.Provider("cluster", kubeconfig="{}")
    for index in range(PROD_RESOURCES - 1):
        k8s.core.v1.ConfigMap(f"cm-{index}", metadata={"name": f"cm-{index}"}, data={"k": "v"},
                              opts=pulumi.ResourceOptions(provider=provider))


def test_baseline_same_number_of_configmaps(benchmark: Any) -> None:
    recording = benchmark.pedantic(run_azure_program, args=(_baseline_program,), rounds=5, iterations=1,
                                   warmup_rounds=1)
    assert len(recording.registrations) == PROD_RESOURCES
    _per_resource(benchmark, PROD_RESOURCES)


@pytest.mark.parametrize("pools", POOL_COUNTS)
def test_cluster_scaling_with_pools(benchmark: Any, pools: int) -> None:
    document = _document(pools)

    def program() -> None:
        GpuCluster("gpu", {"config": document, "azure_provider": azure_native.Provider("azure")})

    recording = benchmark.pedantic(run_azure_program, args=(program,), rounds=3, iterations=1, warmup_rounds=1)
    assert len(recording.of_type("azure-native:containerservice:AgentPool")) == pools
    _per_resource(benchmark, len(recording.registrations))


@pytest.mark.parametrize("pools", POOL_COUNTS)
def test_baseline_bare_agent_pools(benchmark: Any, pools: int) -> None:
    def program() -> None:
        azure = azure_native.Provider("azure")
        for index in range(pools):
            containerservice.AgentPool(
                f"pool-{index}", resource_group_name="rg-gpu", resource_name_="aks-gpu", agent_pool_name=f"p{index}",
                vm_size="Standard_ND96isr_H100_v5", count=2, opts=pulumi.ResourceOptions(provider=azure),
            )

    recording = benchmark.pedantic(run_azure_program, args=(program,), rounds=3, iterations=1, warmup_rounds=1)
    assert len(recording.of_type("azure-native:containerservice:AgentPool")) == pools
    _per_resource(benchmark, len(recording.registrations))


@pytest.mark.parametrize("pools", POOL_COUNTS)
def test_config_and_agent_pools_render(benchmark: Any, pools: int) -> None:
    document = _document(pools)
    resources = benchmark(lambda: agent_pool_resources(parse_config(document)))
    assert len(resources) == pools
    _per_resource(benchmark, pools)
