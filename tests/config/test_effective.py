"""The effective config: what pools imply for tolerations, node OSes and GPUDirect RDMA, derived idempotently."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_operator.config import GpuStackConfig, load_config, parse_config
from gpu_operator.config.effective import effective_config
from tests.golden.cases import CASES
from tests.support.stack_programs import stack_config, stack_files

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}
T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}
OPERAND_DEFAULT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def effective(*pools: dict[str, Any], aks: dict[str, Any] | None = None, **sections: Any) -> GpuStackConfig:
    return parse_config({"aks": aks or AKS, "pools": list(pools), **sections})


def tolerations(config: GpuStackConfig) -> list[dict[str, Any]]:
    return [t.model_dump(by_alias=True, exclude_none=True) for t in config.operator.daemonsets.tolerations]


def os_tags(config: GpuStackConfig) -> list[str]:
    return [os.tag for os in config.cluster.operating_systems]


def test_every_pool_taint_is_tolerated_after_the_operands_default() -> None:
    config = effective(H100, {**T4, "taints": ["sku=gpu:NoSchedule", "dedicated:NoExecute"]})
    assert tolerations(config) == [
        OPERAND_DEFAULT,
        {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
    ]


def test_tolerations_written_by_hand_are_kept() -> None:
    own = {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
    config = effective(H100, operator={"daemonsets": {"tolerations": [own]}})
    assert tolerations(config)[0] == own
    assert {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"} in tolerations(config)
    assert OPERAND_DEFAULT not in tolerations(config)


@pytest.mark.parametrize("version, os_sku, tag", [
    ("1.34", "Ubuntu", "ubuntu22.04"),
    ("1.34.2", "Ubuntu", "ubuntu22.04"),
    ("1.35", "Ubuntu", "ubuntu24.04"),
    ("1.36", "Ubuntu", "ubuntu24.04"),
    ("1.35", "Ubuntu2204", "ubuntu22.04"),
])
def test_node_os_follows_os_sku_and_kubernetes_version(version: str, os_sku: str, tag: str) -> None:
    config = effective({**H100, "osSKU": os_sku}, aks={**AKS, "kubernetesVersion": version})
    assert os_tags(config) == [tag]


def test_pool_orchestrator_version_wins_and_distinct_images_are_listed_once() -> None:
    config = effective(H100, {**T4, "orchestratorVersion": "1.34"}, {**T4, "name": "t4b"},
                       aks={**AKS, "kubernetesVersion": "1.35"})
    assert os_tags(config) == ["ubuntu24.04", "ubuntu22.04"]


def test_operating_systems_written_by_hand_keep_their_kernels() -> None:
    kernels = {"id": "ubuntu", "versionId": "22.04", "kernelVersions": ["5.15.0-1074-azure"]}
    config = effective(H100, {**T4, "orchestratorVersion": "1.34"}, cluster={"operatingSystems": [kernels]},
                       aks={**AKS, "kubernetesVersion": "1.35"})
    assert os_tags(config) == ["ubuntu22.04", "ubuntu24.04"]
    assert config.cluster.operating_systems[0].kernel_versions == ("5.15.0-1074-azure",)


def test_infiniband_pools_pin_the_open_kernel_modules() -> None:
    assert effective(H100).operator.driver.kernel_module_type == "open"
    assert effective(T4).operator.driver.kernel_module_type == "auto"


@pytest.mark.parametrize("operator", [
    {"driver": {"kernelModuleType": "proprietary"}},
    {"driver": {"kernelModuleType": "auto"}},
    {"driver": {"useOpenKernelModules": False}},
])
def test_a_kernel_module_choice_written_by_hand_is_kept(operator: dict[str, Any]) -> None:
    chosen = operator["driver"].get("kernelModuleType", "auto")
    assert effective(H100, operator=operator).operator.driver.kernel_module_type == chosen


def test_no_pin_without_the_operator_driver() -> None:
    aks_driver = {"driver": {"enabled": False}, "toolkit": {"enabled": False}}
    config = effective({**H100, "gpuDriver": "aks"}, operator=aks_driver)
    assert config.operator.driver.kernel_module_type == "auto"


def test_a_document_without_pools_is_returned_unchanged() -> None:
    raw = GpuStackConfig.model_validate({"operator": {"mig": {"strategy": "mixed"}}})
    assert effective_config(raw) is raw


def _documents() -> dict[str, Any]:
    cases: dict[str, Any] = {f"example:{name}": load_config(path) for name, path in CASES.items()}
    for env, path in stack_files().items():
        cases[f"stack:{env}"] = parse_config(json.loads(stack_config(path)["gpu-operator:config"]))
    return cases


@pytest.mark.parametrize("name, config", sorted(_documents().items()))
def test_derivation_is_idempotent_and_survives_a_round_trip(name: str, config: GpuStackConfig) -> None:
    assert parse_config(config) == config
    assert parse_config(config.to_document()) == config
    assert parse_config(config.to_document(exclude_defaults=True)) == config
