"""The labels a GPU pool's nodes carry from creation, and its taints."""

from __future__ import annotations

import pytest

from gpu_operator.config import GpuStackConfig
from gpu_operator.render import render
from gpu_operator.render.aks.node_labels import (
    WORKLOAD_OPERANDS,
    pool_node_labels,
    pool_taints,
    rendered_deploy_operands,
)
from tests.render.aks.helpers import A100, H100, T4, with_pools

CONTAINER_OPERANDS = {
    "driver", "container-toolkit", "operator-validator", "device-plugin", "dcgm-exporter", "gpu-feature-discovery",
}
#: NVIDIA labels a container node with its whole set, whichever operands run (state_manager.go gpuStateLabels).
NVIDIA_CONTAINER = set(WORKLOAD_OPERANDS["container"])


def labels_of(config: GpuStackConfig, pool: int = 0) -> dict[str, str]:
    return pool_node_labels(config.pools[pool], config, rendered_deploy_operands(render(config)))


def deploy(labels: dict[str, str]) -> set[str]:
    return {key.removeprefix("nvidia.com/gpu.deploy.") for key in labels if key.startswith("nvidia.com/gpu.deploy.")}


def test_rendered_operands_are_what_the_daemonsets_select() -> None:
    config = with_pools(H100)
    assert rendered_deploy_operands(render(config)) == CONTAINER_OPERANDS | {"mig-manager"}


def test_container_pool_on_a_mig_gpu() -> None:
    labels = labels_of(with_pools(H100))
    assert labels["nvidia.com/gpu.present"] == "true"
    assert deploy(labels) == NVIDIA_CONTAINER | {"mig-manager", "client"}
    assert all(labels[f"nvidia.com/gpu.deploy.{name}"] == "true" for name in deploy(labels))
    assert labels["nvidia.com/mig.config"] == "all-disabled"
    assert "nvidia.com/device-plugin.config" not in labels
    assert "nvidia.com/gpu.workload.config" not in labels


def test_no_mig_manager_or_mig_config_on_a_t4() -> None:
    labels = labels_of(with_pools(T4))
    assert deploy(labels) == NVIDIA_CONTAINER | {"client"}
    assert "nvidia.com/mig.config" not in labels


def test_mig_config_of_the_pool() -> None:
    assert labels_of(with_pools({**A100, "migConfig": "all-3g.40gb"}))["nvidia.com/mig.config"] == "all-3g.40gb"


def test_mig_manager_disabled_means_no_mig_layout() -> None:
    labels = labels_of(with_pools(H100, operator={"migManager": {"enabled": False}}))
    assert "mig-manager" in deploy(labels)  # NVIDIA's addGPUStateLabels labels MIG-capable nodes regardless
    assert "nvidia.com/mig.config" not in labels


def test_no_default_mig_config_means_no_label_until_one_is_chosen() -> None:
    labels = labels_of(with_pools(H100, operator={"migManager": {"config": {"default": ""}}}))
    assert "nvidia.com/mig.config" not in labels
    assert "mig-manager" in deploy(labels)


def test_sharing_config_of_the_pool() -> None:
    config = with_pools(
        {**T4, "devicePluginConfig": "shared-4"},
        T4 | {"name": "t4b"},
        operator={"devicePlugin": {"config": {"name": "plugin-config"}}},
        configs={"devicePlugin": {"shared-4": {"sharing": {"timeSlicing": {"resources": [
            {"name": "nvidia.com/gpu", "replicas": 4}]}}}}},
    )
    assert labels_of(config, 0)["nvidia.com/device-plugin.config"] == "shared-4"
    assert "nvidia.com/device-plugin.config" not in labels_of(config, 1)


def test_disabled_operands_keep_nvidias_deploy_label() -> None:
    config = with_pools(H100, operator={"dcgmExporter": {"enabled": False}, "dcgm": {"enabled": True}})
    labels = labels_of(config)
    assert {"dcgm-exporter", "dcgm"} <= deploy(labels)


def test_aks_managed_driver_pool_keeps_nvidias_container_set() -> None:
    config = with_pools({**T4, "gpuDriver": "aks"},
                        operator={"driver": {"enabled": False}, "toolkit": {"enabled": False}})
    assert deploy(labels_of(config)) == NVIDIA_CONTAINER | {"client"}  # no DaemonSet selects driver or toolkit


@pytest.mark.parametrize("workload, expected", [
    ("container", NVIDIA_CONTAINER | {"mig-manager", "client"}),
    ("vm-passthrough", {"sandbox-device-plugin", "sandbox-validator", "vfio-manager", "kata-manager", "cc-manager",
                        "client"}),
    ("vm-vgpu", {"sandbox-device-plugin", "vgpu-manager", "sandbox-validator", "vgpu-device-manager", "cc-manager",
                 "client"}),
])
def test_sandbox_workloads(workload: str, expected: set[str]) -> None:
    config = with_pools({**H100, "workload": workload}, operator={"sandboxWorkloads": {"enabled": True}})
    labels = labels_of(config)
    assert deploy(labels) == expected
    assert labels["nvidia.com/gpu.workload.config"] == workload
    # nodelabeling_controller.go updateGPUStateLabels seeds every MIG-capable GPU node, whatever its workload
    assert labels["nvidia.com/mig.config"] == "all-disabled"


def test_workload_table_is_nvidias() -> None:
    assert set(WORKLOAD_OPERANDS) == {"container", "vm-passthrough", "vm-vgpu"}
    assert "mig-manager" not in WORKLOAD_OPERANDS["container"]
    assert "vgpu-manager" in WORKLOAD_OPERANDS["vm-vgpu"]
    assert "kata-manager" in WORKLOAD_OPERANDS["vm-passthrough"]


def test_own_labels_come_along() -> None:
    labels = labels_of(with_pools({**H100, "labels": {"team": "research"}}))
    assert labels["team"] == "research"
    assert next(iter(labels)) == "team"


def test_taints_in_aks_form() -> None:
    assert pool_taints(with_pools(H100).pools[0]) == ["sku=gpu:NoSchedule"]
    config = with_pools({**H100, "taints": ["sku=gpu:NoSchedule", "dedicated:NoExecute"]})
    assert pool_taints(config.pools[0]) == ["sku=gpu:NoSchedule", "dedicated:NoExecute"]
    assert pool_taints(with_pools({**H100, "taints": []}).pools[0]) == []
