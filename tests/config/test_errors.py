"""A bad config fails with every problem listed under its path; each cross-section rule fails and passes."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, Problem, parse_config
from gpu_operator.config.checks import CHECKS
from tests.support.agents import with_agents

DIGEST_HEX = "0123456789abcdef" * 4
SHARED_GPU = [{"name": "nvidia.com/gpu", "replicas": 4}]
MPS = {"sharing": {"mps": {"resources": SHARED_GPU}}}


def problems_of(document: dict[str, Any]) -> tuple[Problem, ...]:
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    return caught.value.problems


def test_every_problem_is_listed_with_its_path() -> None:
    document = {
        "operater": {},
        "operator": {
            "driver": {"enabled": "sometimes"},
            "mig": {"strategy": "maybe"},
            "toolkit": {"version": DIGEST_HEX},
        },
        "configs": {
            "devicePlugin": {
                "sliced": {"sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}}},
                "mps": {
                    "flags": {"migStrategy": "mixed"},
                    "sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}},
                },
            }
        },
    }
    problems = {p.path: p.message for p in problems_of(document)}
    assert set(problems) == {
        "operater",
        "operator.driver.enabled",
        "operator.mig.strategy",
        "operator.toolkit.version",
        "configs.devicePlugin.sliced.sharing.timeSlicing.resources[0].replicas",
        "configs.devicePlugin.mps",
    }
    assert "unknown key" in problems["operater"]
    assert "must be a boolean" in problems["operator.driver.enabled"]
    assert "'sometimes'" in problems["operator.driver.enabled"]
    assert "'maybe'" in problems["operator.mig.strategy"]
    assert "'sha256:' prefix" in problems["operator.toolkit.version"]
    assert "at least 2" in problems["configs.devicePlugin.sliced.sharing.timeSlicing.resources[0].replicas"]
    assert "mixed" in problems["configs.devicePlugin.mps"]


def test_error_message_lists_each_problem_on_its_own_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"operator": {"mig": {"strategy": "maybe"}, "psa": {"enabled": "perhaps"}}}, source="stack.yaml")
    text = str(caught.value)
    assert text.startswith("2 problems in stack.yaml:\n")
    assert "\n  - operator.mig.strategy: " in text and "\n  - operator.psa.enabled: " in text


def test_cross_section_problems_are_all_listed() -> None:
    document = {
        "operator": {
            "mig": {"strategy": "mixed"},
            "driver": {"useNvidiaDriverCRD": True},
            "kataManager": {"enabled": True},
            "devicePlugin": {"config": {"name": "plugin-config", "default": "mps"}},
        },
        "configs": {"devicePlugin": {"mps": MPS}},
    }
    assert {p.path for p in problems_of(document)} == {
        "configs.devicePlugin.mps.sharing.mps",
        "operator.kataManager.enabled",
    }


MIG_CONFIG = {"version": "v1", "mig-configs": {"all-disabled": [{"devices": "all", "mig-enabled": False}]}}
CUSTOM_MIG = {
    "version": "v1",
    "mig-configs": {"half": [{"devices": [0], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]},
}
METRICS = "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
KERNELS = [{"id": "ubuntu", "versionId": "22.04", "kernelVersions": ["5.15.0-1074-azure"]}]


def plugin_configs(*names: str, **reference: str) -> dict[str, Any]:
    """Device-plugin configs named `names`, and the operator's reference to their ConfigMap."""
    return {
        "configs": {"devicePlugin": {name: {} for name in names}},
        "operator": {"devicePlugin": {"config": {"name": "plugin-config", **reference}}},
    }

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
CREATED_AKS = {**AKS, "create": True, "location": "westeurope"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}
T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}
V100_FACTS = {"model": "V100-SXM2-32GB", "count": 8, "memoryGiB": 32}
NO_AKS_DRIVER = {"driver": {"enabled": False}, "toolkit": {"enabled": False}}


def with_pools(*pools: dict[str, Any], **sections: Any) -> dict[str, Any]:
    """A document with the AKS cluster, these pools and any other sections."""
    return {"aks": AKS, "pools": list(pools), **sections}


# (check, failing document, path of its problem, a passing document)
_IMAGE = {"agents": {"image": {"repository": "example.azurecr.io/gpu-operator-agents", "tag": "1.0.0"}}}

CASES: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("_chart_values_are_typed", {"nfd": {"values": {"worker": {"tolerations": {"key": "a"}}}}},
     "nfd.values.worker.tolerations", {"nfd": {"values": {"worker": {"tolerations": [{"key": "a"}]}}}}),
    ("_system_namespaces", {"namespace": "kube-system"}, "namespace", {"namespace": "gpu-system"}),
    ("_controller_needs_the_agents_image", {"controller": {"enabled": True}}, "controller.enabled",
     {**_IMAGE, "controller": {"enabled": True}}),
    ("_controller_needs_the_agents_image", {"controller": {"waitForDriverRollout": True}},
     "controller.waitForDriverRollout", {**_IMAGE, "controller": {"waitForDriverRollout": True}}),
    (
        "_configmap_contents_need_a_name",
        {"configs": {"devicePlugin": {"shared": {}}}},
        "operator.devicePlugin.config.name",
        plugin_configs("shared"),
    ),
    (
        "_configmap_contents_need_a_name",
        {"configs": {"migManager": MIG_CONFIG}},
        "operator.migManager.config.name",
        {"configs": {"migManager": MIG_CONFIG}, "operator": {"migManager": {"config": {"name": "mig-config"}}}},
    ),
    (
        "_configmap_contents_need_a_name",
        {"configs": {"dcgmExporter": METRICS}},
        "operator.dcgmExporter.config.name",
        {"configs": {"dcgmExporter": METRICS}, "operator": {"dcgmExporter": {"config": {"name": "metrics"}}}},
    ),
    (
        "_device_plugin_default_exists",
        plugin_configs("a", default="b"),
        "operator.devicePlugin.config.default",
        plugin_configs("a", default="a"),
    ),
    (
        "_device_plugin_default_exists",
        plugin_configs("a", "b"),
        "operator.devicePlugin.config.default",
        plugin_configs("a"),
    ),
    (
        "_mps_inherits_mig_strategy",
        {
            "configs": {"devicePlugin": {"mps": MPS}},
            "operator": {"mig": {"strategy": "mixed"}, "devicePlugin": {"config": {"name": "c"}}},
        },
        "configs.devicePlugin.mps.sharing.mps",
        {
            "configs": {"devicePlugin": {"mps": {"flags": {"migStrategy": "single"}, **MPS}}},
            "operator": {"mig": {"strategy": "mixed"}, "devicePlugin": {"config": {"name": "c"}}},
        },
    ),
    (
        "_mig_default_config_exists",
        {"configs": {"migManager": CUSTOM_MIG}, "operator": {"migManager": {"config": {"name": "m"}}}},
        "configs.migManager.mig-configs",
        {"configs": {"migManager": CUSTOM_MIG}, "operator": {"migManager": {"config": {"name": "m", "default": ""}}}},
    ),
    (
        "_nri_needs_cdi_and_toolkit",
        {"operator": {"cdi": {"nriPluginEnabled": True}, "toolkit": {"enabled": False}}},
        "operator.cdi.nriPluginEnabled",
        {"operator": {"cdi": {"nriPluginEnabled": True}}},
    ),
    (
        "_nri_needs_cdi_and_toolkit",
        {"operator": {"cdi": {"enabled": False, "nriPluginEnabled": True}}},
        "operator.cdi.nriPluginEnabled",
        {"operator": {"cdi": {"enabled": False}}},
    ),
    (
        "_default_runtime_is_the_clusters",
        {"operator": {"operator": {"defaultRuntime": "crio"}}},
        "operator.operator.defaultRuntime",
        {"operator": {"operator": {"defaultRuntime": "crio"}}, "cluster": {"containerRuntime": "crio"}},
    ),
    (
        "_driver_image_is_published",
        {"cluster": {"operatingSystems": [{"id": "ubuntu", "versionId": "22.04"}, {"id": "sles", "versionId": "15.6"}]}},
        "cluster.operatingSystems[1].id",
        {"cluster": {"operatingSystems": [{"id": "sles", "versionId": "15.6"}]},
         "operator": {"driver": {"repository": "registry.example.com/drivers"}}},
    ),
    (
        "_unsupported_modes",
        {"operator": {"operator": {"use_ocp_driver_toolkit": True}}},
        "operator.operator.use_ocp_driver_toolkit",
        {"operator": {"operator": {"use_ocp_driver_toolkit": False}}},
    ),
    (
        "_unsupported_modes",
        {"operator": {"kataManager": {"enabled": True}}},
        "operator.kataManager.enabled",
        {"operator": {"sandboxWorkloads": {"enabled": True, "mode": "kata"}}},
    ),
    (
        "_precompiled_needs_kernels",
        {"operator": {"driver": {"usePrecompiled": True}}},
        "cluster.operatingSystems[0].kernelVersions",
        {
            "operator": {"driver": {"usePrecompiled": True}},
            "cluster": {"operatingSystems": KERNELS},
        },
    ),
    (
        "_vgpu_manager_needs_an_image",
        {"operator": {"sandboxWorkloads": {"enabled": True}, "vgpuManager": {"enabled": True}}},
        "operator.vgpuManager",
        {
            "operator": {
                "sandboxWorkloads": {"enabled": True},
                "vgpuManager": {"enabled": True, "repository": "registry.example.com/nvidia", "version": "550.90.05"},
            }
        },
    ),
    (
        "_toolkit_host_paths",
        {"operator": {"toolkit": {"env": [{"name": "CONTAINERD_CONFIG", "value": "etc/containerd/config.toml"}]}}},
        "operator.toolkit.env[0].value",
        {"operator": {"toolkit": {"env": [{"name": "CONTAINERD_CONFIG", "value": "/etc/containerd/config.toml"}]}}},
    ),
    (
        "_device_plugin_config_name",
        {"operator": {"devicePlugin": {"config": {"name": "mps-root"}}}},
        "operator.devicePlugin.config.name",
        {"operator": {"devicePlugin": {"config": {"name": "plugin-configs"}}}},
    ),
    (
        "_mig_config_name_is_free",
        {"operator": {"migManager": {"gpuClientsConfig": {"name": "default-gpu-clients"}}}},
        "operator.migManager.gpuClientsConfig.name",
        {"operator": {"migManager": {"gpuClientsConfig": {"name": "my-gpu-clients"}}}},
    ),
    (
        "_precompiled_driver_rules",
        {
            "cluster": {"operatingSystems": [{"id": "ubuntu", "versionId": "22.04", "kernelVersions": ["6.8.0-1"]}]},
            "operator": {"driver": {"usePrecompiled": True}, "gdrcopy": {"enabled": True}},
        },
        "operator.gdrcopy.enabled",
        {
            "cluster": {"operatingSystems": [{"id": "ubuntu", "versionId": "22.04", "kernelVersions": ["6.8.0-1"]}]},
            "operator": {"driver": {"usePrecompiled": True}},
        },
    ),
    (
        "_driver_files_are_known",
        {"operator": {"driver": {"certConfig": {"name": "corporate-ca"}}}},
        "operator.driver.certConfig.name",
        {"operator": {"driver": {"certConfig": {"name": "corporate-ca"}}}, "configs": {"driverCertConfig": ["ca.crt"]}},
    ),
    (
        "_driver_customisation_fits_the_os",
        {
            "cluster": {"operatingSystems": [{"id": "azurelinux", "versionId": "3.0"}]},
            "operator": {"driver": {"certConfig": {"name": "corporate-ca"}, "repository": "registry.example.com/d"}},
            "configs": {"driverCertConfig": ["ca.crt"]},
        },
        "operator.driver.certConfig.name",
        {
            "cluster": {"operatingSystems": [{"id": "ubuntu", "versionId": "24.04"}]},
            "operator": {"driver": {"certConfig": {"name": "corporate-ca"}}},
            "configs": {"driverCertConfig": ["ca.crt"]},
        },
    ),
    (
        "_driver_probes_and_env",
        {"operator": {"driver": {"env": [{"name": "DRIVER_CONFIG_DIGEST", "value": "x"}]}}},
        "operator.driver.env[0].name",
        {"operator": {"driver": {"env": [{"name": "DRIVER_DEBUG", "value": "1"}]}}},
    ),
    (
        "_hpc_job_mapping_directory",
        {"operator": {"dcgmExporter": {"hpcJobMapping": {"enabled": True}}}},
        "operator.dcgmExporter.hpcJobMapping.directory",
        {"operator": {"dcgmExporter": {"hpcJobMapping": {"enabled": True, "directory": "/var/lib/job-mapping"}}}},
    ),
    (
        "_metrics_our_exporter_reads",
        {**with_agents(), "operator": {"dcgmExporter": {"config": {"name": "metrics"}}},
         "configs": {"dcgmExporter": [{"field": "DCGM_FI_DEV_GPU_TEMP", "type": "gauge"},
                                      {"field": "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "type": "counter"}]}},
        "configs.dcgmExporter",
        {**with_agents(overrides={"dcgmExporter": "nvidia"}),
         "operator": {"dcgmExporter": {"config": {"name": "metrics"}}},
         "configs": {"dcgmExporter": [{"field": "DCGM_FI_DEV_GPU_TEMP", "type": "gauge"},
                                      {"field": "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "type": "counter"}]}},
    ),
    (
        "_service_monitor_needs_prometheus_operator",
        {"operator": {"dcgmExporter": {"serviceMonitor": {"enabled": True}}}},
        "operator.dcgmExporter.serviceMonitor.enabled",
        {"cluster": {"prometheusOperator": True}, "operator": {"dcgmExporter": {"serviceMonitor": {"enabled": True}}}},
    ),
    (
        "_rules_need_prometheus_operator",
        {"monitoring": {"prometheusRules": True}},
        "monitoring.prometheusRules",
        {"cluster": {"prometheusOperator": True}, "monitoring": {"prometheusRules": True}},
    ),
    (
        "_parts_need_monitoring",
        {"monitoring": {"enabled": False, "dashboard": True}},
        "monitoring.dashboard",
        {"monitoring": {"enabled": True, "dashboard": True}},
    ),
    (
        "_pools_need_an_aks_cluster",
        {"pools": [{**H100, "osSKU": "Ubuntu2204"}]},
        "aks",
        with_pools(H100),
    ),
    (
        "_pool_names_are_unique",
        with_pools(H100, H100),
        "pools[1].name",
        with_pools(H100, {**H100, "name": "h100b"}),
    ),
    (
        "_pool_names_are_unique",
        {"aks": CREATED_AKS, "pools": [{**H100, "name": "system"}]},
        "pools[0].name",
        {"aks": {**CREATED_AKS, "systemPool": {"name": "sys"}}, "pools": [{**H100, "name": "system"}]},
    ),
    (
        "_pool_vm_size_is_known",
        with_pools({"name": "v100", "vmSize": "Standard_ND40rs_v2"}),
        "pools[0].vmSize",
        with_pools({"name": "v100", "vmSize": "Standard_ND40rs_v2", "gpu": V100_FACTS}),
    ),
    (
        "_pool_count_fits_autoscale",
        with_pools({**H100, "count": 5, "autoscale": {"minCount": 0, "maxCount": 4}}),
        "pools[0].count",
        with_pools({**H100, "count": 4, "autoscale": {"minCount": 0, "maxCount": 4}}),
    ),
    (
        # Azure: at most 50 tags on a resource; a pool carries aks.tags and its own
        "_pool_tags_fit_azures_limit",
        {"aks": {**AKS, "tags": {f"c{i}": "x" for i in range(30)}},
         "pools": [{**H100, "tags": {f"p{i}": "x" for i in range(21)}}]},
        "pools[0].tags",
        {"aks": {**AKS, "tags": {f"c{i}": "x" for i in range(30)}},
         "pools": [{**H100, "tags": {f"p{i}": "x" for i in range(20)}}]},
    ),
    (
        # AKS upgrades the control plane first; a pool may lag it, never lead it ("1.34" is the newest 1.34 patch)
        "_pool_not_newer_than_its_cluster",
        with_pools({**H100, "orchestratorVersion": "1.35"}),
        "pools[0].orchestratorVersion",
        with_pools({**H100, "orchestratorVersion": "1.34.9"}),
    ),
    (
        "_aks_managed_driver_excludes_operator_driver",
        with_pools({**T4, "gpuDriver": "aks"}, operator={"toolkit": {"enabled": False}}),
        "operator.driver.enabled",
        with_pools({**T4, "gpuDriver": "aks"}, operator=NO_AKS_DRIVER),
    ),
    (
        "_aks_managed_driver_excludes_operator_driver",
        with_pools({**T4, "gpuDriver": "aks"}, operator={"driver": {"enabled": False}}),
        "operator.toolkit.enabled",
        with_pools({**T4, "gpuDriver": "operator"}, operator={"driver": {"enabled": False}}),
    ),
    (
        "_pool_os_is_known",
        {"aks": {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu"}, "pools": [H100]},
        "pools[0].osSKU",
        {"aks": {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu"}, "pools": [{**H100, "orchestratorVersion": "1.33"}]},
    ),
    (
        "_pool_mig_config",
        with_pools({**T4, "migConfig": "all-1g.5gb"}),
        "pools[0].migConfig",
        with_pools({**H100, "migConfig": "all-1g.10gb"}),
    ),
    (
        "_pool_mig_config",
        with_pools({**H100, "migConfig": "all-1g.5gb"}),
        "pools[0].migConfig",
        with_pools({**H100, "migConfig": "all-7g.80gb"}),
    ),
    (
        "_pool_mig_config",
        with_pools({**H100, "migConfig": "all-balanced"}),
        "pools[0].migConfig",
        with_pools({**H100, "migConfig": "all-balanced"}, operator={"mig": {"strategy": "mixed"}}),
    ),
    (
        "_pool_mig_config",
        with_pools({**H100, "migConfig": "all-1g.10gb"}, operator={"migManager": {"enabled": False}}),
        "pools[0].migConfig",
        with_pools(H100, operator={"migManager": {"enabled": False}}),
    ),
    (
        "_pool_mig_config",
        with_pools({**H100, "migConfig": "all-1g.10gb"}, configs={"migManager": CUSTOM_MIG},
                   operator={"migManager": {"config": {"name": "mig-config", "default": ""}}}),
        "pools[0].migConfig",
        with_pools({**H100, "migConfig": "half"}, configs={"migManager": CUSTOM_MIG},
                   operator={"migManager": {"config": {"name": "mig-config", "default": ""}}}),
    ),
    (
        "_pool_device_plugin_config_exists",
        with_pools({**T4, "devicePluginConfig": "shared"}),
        "pools[0].devicePluginConfig",
        with_pools({**T4, "devicePluginConfig": "shared"}, **plugin_configs("shared")),
    ),
    (
        "_pool_device_plugin_config_exists",
        with_pools({**T4, "devicePluginConfig": "shared"}, **plugin_configs("exclusive")),
        "pools[0].devicePluginConfig",
        with_pools({**T4, "devicePluginConfig": "exclusive"}, **plugin_configs("exclusive")),
    ),
    (
        "_pool_workload_needs_sandbox",
        with_pools({**H100, "workload": "vm-passthrough"}),
        "pools[0].workload",
        with_pools({**H100, "workload": "vm-passthrough"}, operator={"sandboxWorkloads": {"enabled": True}}),
    ),
    (
        "_aks_cluster_settings",
        {"aks": {**AKS, "create": True}},
        "aks.location",
        {"aks": CREATED_AKS},
    ),
    (
        "_aks_cluster_settings",
        {"aks": {**AKS, "systemPool": {"count": 3}}},
        "aks.systemPool",
        {"aks": {**CREATED_AKS, "systemPool": {"count": 3}}},
    ),
    (
        "_rdma_needs_infiniband_pools",
        with_pools(T4, network={"enabled": True}),
        "network.enabled",
        with_pools(H100, network={"enabled": True}),
    ),
    (
        "_rdma_needs_infiniband_pools",
        with_pools(T4, operator={"driver": {"rdma": {"enabled": True, "useHostMofed": True}}}),
        "operator.driver.rdma.enabled",
        with_pools(H100, operator={"driver": {"rdma": {"enabled": True}}}),
    ),
    (
        "_network_needs_nic_ids",
        {"network": {"enabled": True}},
        "network.vfDeviceIds",
        {"network": {"enabled": True, "vfDeviceIds": ["101e"]}},
    ),
    (
        "_peermem_needs_mofed",
        with_pools(H100, network={"enabled": False}, operator={"driver": {"rdma": {"enabled": True}}}),
        "operator.driver.rdma.enabled",
        with_pools(H100, operator={"driver": {"rdma": {"enabled": True}}}),
    ),
    (
        "_peermem_needs_mofed",
        with_pools(H100, operator={"driver": {"rdma": {"enabled": True, "useHostMofed": True}}}),
        "operator.driver.rdma.useHostMofed",
        with_pools(H100, network={"mofed": "host"}, operator={"driver": {"rdma": {"enabled": True,
                                                                                  "useHostMofed": True}}}),
    ),
    (
        "_one_nfd",
        with_pools(H100, nfd={"enabled": True}),
        "nfd.enabled",
        with_pools(H100, nfd={"enabled": False}),
    ),
    (
        "_ipoib_needs_ipam",
        with_pools(H100, network={"ipoib": {}}),
        "network.ipoib.ipPool",
        with_pools(H100, network={"ipoib": {"ipPool": {"subnet": "192.168.0.0/16"}}}),
    ),
    (
        "_ipoib_needs_ipam",
        with_pools(H100, network={"ipoib": {"ipPool": {"subnet": "192.168.0.0/16"}, "ipam": '{"type": "x"}'}}),
        "network.ipoib.ipam",
        with_pools(H100, network={"ipoib": {"ipam": '{"type": "whereabouts", "range": "192.168.0.0/16"}'}}),
    ),
    (
        "_monitoring_labels",
        {"monitoring": {"ruleLabels": {"prometheus instance": "main"}}},
        "monitoring.ruleLabels",
        {"monitoring": {"ruleLabels": {"prometheus": "main"}}},
    ),
    (
        "_runbook_url",
        {"monitoring": {"runbookUrl": "https://{alert}"}},
        "monitoring.runbookUrl",
        {"monitoring": {"runbookUrl": "https://runbooks.example.com/{alert}"}},
    ),
]


@pytest.mark.parametrize("check, failing, path, passing", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_cross_section_rule(check: str, failing: dict[str, Any], path: str, passing: dict[str, Any]) -> None:
    assert [p.path for p in problems_of(failing)] == [path]
    parse_config(passing)


def test_every_rule_has_a_case() -> None:
    from tests.config.test_dra import DRA_CASES  # the DRA rules' cases live beside the DRA section's tests
    from tests.config.test_driver_checks import DRIVER_CASES  # the per-pool drivers' beside theirs
    from tests.config.test_driver_rollout import ROLLOUT_CASES  # the staged rollout's beside its own
    from tests.config.test_remediation import REMEDIATION_CASES  # and the remediation rules' beside theirs

    cases = CASES + DRA_CASES + DRIVER_CASES + ROLLOUT_CASES + REMEDIATION_CASES
    assert {case[0] for case in cases} == {check.__name__ for check in CHECKS}


@pytest.mark.parametrize(("document", "expected"), [
    ({1: "x"}, "1: the key 1 is read as a number, not a string; quote it ('1')"),
    ({None: "x"}, "null: the key null is read as null, not a string; quote it ('null')"),
    ({"operator": {"daemonsets": {"labels": {True: "x"}}}},
     "operator.daemonsets.labels.true: the key true is read as a boolean, not a string; quote it ('true')"),
])
def test_a_key_yaml_did_not_read_as_a_string_is_named_as_written(document: dict[Any, Any], expected: str) -> None:
    assert [str(problem) for problem in problems_of(document)] == [expected]
