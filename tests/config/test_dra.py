"""The `dra` section and its rules: every DRA rule fails with its key and the fix, and passes once fixed."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.dra import EVICTION_LABEL_ENV, dra_node_pools
from gpu_operator.facts.dra_driver import DRA_NODE_LABEL
from tests.config.test_errors import AKS, H100, problems_of, with_pools

H100_DRA = {**H100, "name": "h100dra", "gpuAllocation": "dra"}
AKS_133 = {**AKS, "kubernetesVersion": "1.33"}
T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}


def selector(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def template(*selectors: str, device_class: str = "gpu.nvidia.com", constraints: list[Any] | None = None,
             name: str = "h100") -> dict[str, Any]:
    return {
        "name": name,
        "namespace": "gpu-operator",  # a namespace the stack creates: no dra.namespaces entry needed
        "spec": {"devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class, "count": 2,
                                                     "selectors": [selector(e) for e in selectors]}}],
            "constraints": constraints or [],
        }},
    }


PRODUCT = "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')"

# (check, failing document, path of its problem, a passing document)
DRA_CASES: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("_claim_template_namespaces", with_pools(H100_DRA, dra={"claimTemplates": [{**template(PRODUCT), "namespace": "ml"}]}),
     "dra.claimTemplates[0].namespace",
     with_pools(H100_DRA, dra={"claimTemplates": [{**template(PRODUCT), "namespace": "ml"}],
                               "namespaces": {"ml": "existing"}})),
    ("_claim_template_namespaces", with_pools(H100_DRA, dra={"namespaces": {"kube-system": "create"}}),
     "dra.namespaces.kube-system", with_pools(H100_DRA, dra={"namespaces": {"kube-system": "existing"}})),
    ("_needs_kubernetes_134", {"aks": AKS_133, "pools": [H100_DRA]}, "aks.kubernetesVersion",
     with_pools(H100_DRA)),
    ("_needs_kubernetes_134", {"aks": AKS, "pools": [{**H100_DRA, "orchestratorVersion": "1.32"}]},
     "pools[0].orchestratorVersion", with_pools({**H100_DRA, "orchestratorVersion": "1.34.2"})),
    ("_needs_kubernetes_134", {"dra": {"enabled": True}, "operator": {"devicePlugin": {"enabled": False}}},
     "dra.kubernetesVersion",
     {"dra": {"enabled": True, "kubernetesVersion": "1.34"}, "operator": {"devicePlugin": {"enabled": False}}}),
    # the driver's prerequisites (NVIDIA/k8s-dra-driver-gpu docs/prerequisites.md): v565+ to allocate GPUs,
    # 570.158.01+ for ComputeDomains (cmd/compute-domain-kubelet-plugin/main.go
    # IMEXDaemonsWithDNSNamesMinDriverVersion), Kubernetes 1.34.2+
    ("_dra_floors", with_pools(H100_DRA, operator={"driver": {"version": "570.124.06"}}),
     "operator.driver.version", with_pools(H100_DRA, operator={"driver": {"version": "570.158.01"}})),
    ("_dra_floors",
     with_pools(H100_DRA, dra={"computeDomains": False}, operator={"driver": {"version": "560.35.03"}}),
     "operator.driver.version",
     with_pools(H100_DRA, dra={"computeDomains": False}, operator={"driver": {"version": "565.57.01"}})),
    ("_needs_kubernetes_134",
     {"dra": {"enabled": True, "kubernetesVersion": "1.34.1"}, "operator": {"devicePlugin": {"enabled": False}}},
     "dra.kubernetesVersion",
     {"dra": {"enabled": True, "kubernetesVersion": "1.34.2"}, "operator": {"devicePlugin": {"enabled": False}}}),
    ("_one_allocator_per_pool", with_pools({**H100_DRA, "devicePluginConfig": "shared"}, operator={
        "devicePlugin": {"config": {"name": "plugin-config", "default": "shared"}}},
        configs={"devicePlugin": {"shared": {"version": "v1"}}}),
     "pools[0].devicePluginConfig", with_pools(H100_DRA)),
    ("_one_allocator_per_pool", with_pools(H100_DRA, dra={"enabled": False}), "pools[0].gpuAllocation",
     with_pools(H100, dra={"enabled": False})),
    ("_one_allocator_per_pool", with_pools(H100_DRA, T4, dra={"gpus": False}), "pools[0].gpuAllocation",
     with_pools(H100, T4, dra={"enabled": True, "gpus": False})),
    ("_one_allocator_per_pool",
     {"dra": {"enabled": True, "kubernetesVersion": "1.34"}}, "operator.devicePlugin.enabled",
     {"dra": {"enabled": True, "kubernetesVersion": "1.34"}, "operator": {"devicePlugin": {"enabled": False}}}),
    ("_one_allocator_per_pool", with_pools(H100_DRA, dra={"values": {"kubeletPlugin": {"nodeSelector": {"a": "b"}}}}),
     "dra.values.kubeletPlugin.nodeSelector", with_pools(H100_DRA, dra={"values": {"logVerbosity": "6"}})),
    # one rule for the driver root on both paths: dra.driverRoot, and the chart value it becomes
    ("_driver_root_once",
     with_pools(H100_DRA, dra={"driverRoot": "/run/nvidia/driver", "values": {"nvidiaDriverRoot": "/"}}),
     "dra.values.nvidiaDriverRoot", with_pools(H100_DRA, dra={"driverRoot": "/", "values": {"nvidiaDriverRoot": "/"}})),
    ("_chart_namespace", with_pools(H100_DRA, dra={"namespace": "default"}), "dra.namespace", with_pools(H100_DRA)),
    ("_chart_namespace", with_pools(H100, dra={"enabled": True, "gpus": False, "computeDomains": False}),
     "dra.gpus", with_pools(H100, dra={"enabled": True, "gpus": False})),
    ("_chart_namespace", with_pools(H100, dra={"enabled": True}), "dra.enabled", with_pools(H100_DRA)),
    ("_claim_templates", with_pools(H100_DRA, dra={"claimTemplates": [template(
        "device.attributes['gpu.nvidia.com'].productname == 'x'")]}),
     "dra.claimTemplates[0].spec.devices.requests[0].exactly.selectors[0].cel.expression",
     with_pools(H100_DRA, dra={"claimTemplates": [template(PRODUCT)]})),
    ("_claim_templates", with_pools(H100, dra={"claimTemplates": [template(PRODUCT)]}), "dra.claimTemplates",
     with_pools(H100_DRA, dra={"claimTemplates": [template(PRODUCT)]})),
    ("_claim_templates", with_pools(H100_DRA, dra={"claimTemplates": [template(device_class="gpu.nvidia")]}),
     "dra.claimTemplates[0].spec.devices.requests[0].exactly.deviceClassName",
     with_pools(H100_DRA, dra={"claimTemplates": [template(device_class="mig.nvidia.com")]})),
    ("_claim_templates", with_pools(H100_DRA, dra={"claimTemplates": [template(constraints=[
        {"matchAttribute": "pcieRoot"}])]}), "dra.claimTemplates[0].spec.devices.constraints[0].matchAttribute",
     with_pools(H100_DRA, dra={"claimTemplates": [template(constraints=[
         {"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}])]})),
    ("_claim_templates", with_pools(H100_DRA, dra={"claimTemplates": [template(constraints=[
        {"requests": ["gpus"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}])]}),
     "dra.claimTemplates[0].spec.devices.constraints[0].requests",
     with_pools(H100_DRA, dra={"claimTemplates": [template(constraints=[
         {"requests": ["gpu"], "matchAttribute": "gpu.nvidia.com/productName"}])]})),
]


@pytest.mark.parametrize("check, failing, path, passing", DRA_CASES, ids=[f"{c[0]}-{c[2]}" for c in DRA_CASES])
def test_dra_rule(check: str, failing: dict[str, Any], path: str, passing: dict[str, Any]) -> None:
    assert [p.path for p in problems_of(failing)] == [path]
    parse_config(passing)


def test_a_dra_pool_turns_the_driver_on_and_tells_the_driver_manager_its_label() -> None:
    config = parse_config(with_pools(H100_DRA, H100))
    assert config.dra.enabled is True
    env = {var.name: var.value for var in config.operator.driver.manager.env}
    assert env[EVICTION_LABEL_ENV] == DRA_NODE_LABEL
    assert [pool.name for pool in dra_node_pools(config.dra, config.pools)] == ["h100dra"]
    assert parse_config(config) == config  # idempotent


def test_without_dra_nothing_changes() -> None:
    config = parse_config(with_pools(H100))
    assert config.dra.enabled is None
    assert config.operator.driver.manager.env == ()


def test_a_users_eviction_label_is_kept() -> None:
    own = {"name": EVICTION_LABEL_ENV, "value": "example.com/dra"}
    config = parse_config(with_pools(H100_DRA, operator={"driver": {"manager": {"env": [own]}}}))
    assert [(v.name, v.value) for v in config.operator.driver.manager.env] == [(EVICTION_LABEL_ENV, "example.com/dra")]


def test_a_host_driver_gets_no_driver_manager_env_and_no_branch_check() -> None:
    config = parse_config(with_pools(H100_DRA, operator={"driver": {"enabled": False, "version": "550.1.2"}}))
    assert config.operator.driver.manager.env == ()


def test_compute_domains_only_label_every_container_pool() -> None:
    config = parse_config(with_pools(H100, T4, dra={"enabled": True, "gpus": False}))
    assert [pool.name for pool in dra_node_pools(config.dra, config.pools)] == ["h100", "t4"]


def test_the_dra_node_label_cannot_be_set_by_hand() -> None:
    problems = problems_of(with_pools({**H100, "labels": {DRA_NODE_LABEL: "true"}}))
    assert [p.path for p in problems] == ["pools[0].labels"]
    assert "gpuAllocation" in problems[0].message


@pytest.mark.parametrize("expression, wanted", [
    ("device.attributes['gpu.nvidia.com'].productName ==", "is not valid CEL"),
    ("device.attributes['gpu.nvidia.com'].index == 0", "removed in driver v25.8"),
    ("device.capacity['gpu.nvidia.com'].mem.compareTo(quantity('1Gi')) > 0", "gpu.nvidia.com/memory"),
    ("gpu.productName == 'x'", "one variable, device"),
])
def test_cel_problems_say_what_to_write(expression: str, wanted: str) -> None:
    problems = problems_of(with_pools(H100_DRA, dra={"claimTemplates": [template(expression)]}))
    assert len(problems) == 1 and wanted in problems[0].message, problems


def test_mig_selectors_are_checked_against_mig_devices() -> None:
    mig = template("device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", device_class="mig.nvidia.com")
    parse_config(with_pools(H100_DRA, dra={"claimTemplates": [mig]}))
    on_gpus = template("device.attributes['gpu.nvidia.com'].profile == '1g.10gb'")
    assert [p.path for p in problems_of(with_pools(H100_DRA, dra={"claimTemplates": [on_gpus]}))] == [
        "dra.claimTemplates[0].spec.devices.requests[0].exactly.selectors[0].cel.expression"]


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(with_pools(H100_DRA, dra={"gpu": True}))
    assert [p.path for p in caught.value.problems] == ["dra.gpu"]


@pytest.mark.parametrize(("key", "value"), [("driverRoot", "run/nvidia/driver"),
                                            ("values", {"nvidiaDriverRoot": "run/nvidia/driver"})])
def test_the_driver_root_is_an_absolute_host_path_on_both_paths(key: str, value: Any) -> None:
    """dra.driverRoot refused a relative path; the chart value it becomes (`nvidiaDriverRoot`) took one."""
    path = "dra.driverRoot" if key == "driverRoot" else "dra.values.nvidiaDriverRoot"
    found = {p.path: p.message for p in problems_of(with_pools(H100_DRA, dra={key: value}))}
    assert found[path] == "'run/nvidia/driver' must be an absolute host path such as /run/nvidia/driver or /"


@pytest.mark.parametrize("hook", ["", "/usr/local/nvidia/toolkit/nvidia-cdi-hook"])
def test_the_cdi_hook_path_is_empty_or_absolute(hook: str) -> None:
    parse_config(with_pools(H100_DRA, dra={"values": {"nvidiaCDIHookPath": hook}}))
    found = {p.path for p in problems_of(with_pools(H100_DRA, dra={"values": {"nvidiaCDIHookPath": "bin/hook"}}))}
    assert found == {"dra.values.nvidiaCDIHookPath"}
