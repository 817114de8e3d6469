"""The Network Operator render: CRD-valid resources, schema-valid plugin configs, chart values the chart knows."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml

from gpu_operator.config import parse_config
from gpu_operator.config.network import CHART_VALUE_KEYS
from gpu_operator.render.network import NetworkRender, network_summary, render_network
from gpu_operator.render.network.node_feature_rule import IB_NODE_LABEL
from tests.support.reference import reference_file
from tests.support.schemas import crd_errors, validate_objects

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}
A100 = {"name": "a100", "vmSize": "Standard_ND96asr_v4", "taints": ["team=ml:NoExecute"]}
T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}
IPOIB = {"ipPool": {"subnet": "192.168.0.0/16", "perNodeBlockSize": 128, "gateway": "192.168.0.1"}}

#: One document per NicClusterPolicy shape worth validating.
VARIANTS: dict[str, dict[str, Any]] = {
    "sriov": {},
    "shared": {"devicePlugins": ["shared"]},
    "both": {"devicePlugins": ["sriov", "shared"]},
    "ipoib-nv-ipam": {"devicePlugins": ["shared"], "ipoib": IPOIB},
    "ipoib-own-ipam": {"ipoib": {"ipam": '{"type": "whereabouts", "range": "192.168.0.0/16"}'}},
    "host-mofed-telemetry": {"mofed": "host", "docaTelemetry": True},
    "upgrade-policy": {"ofedDriver": {"upgradePolicy": {
        "safeLoad": True, "maxParallelUpgrades": 0, "waitForCompletion": {"podSelector": "app=train"},
        "drain": {"podSelector": "app!=keep", "force": False}}}},
}


def rendered(network: dict[str, Any] | None = None, pools: tuple[dict[str, Any], ...] = (H100,)) -> NetworkRender:
    result = render_network(parse_config({"aks": AKS, "pools": list(pools), "network": network or {}}))
    assert result is not None
    return result


def _webhook_validator(name: str) -> jsonschema.Validator:
    schema = json.loads(reference_file(f"network-operator/webhook-schemas/{name}").read_text())
    return jsonschema.Draft202012Validator(schema)


def _plugin_config(policy: dict[str, Any], section: str) -> dict[str, Any]:
    return json.loads(policy["spec"][section]["config"])


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_custom_resource_validates_strictly_against_its_crd(variant: str) -> None:
    result = rendered(VARIANTS[variant])
    assert validate_objects(result.objects) == []
    kinds = [obj["kind"] for obj in result.objects]
    assert kinds[:3] == ["Namespace", "NodeFeatureRule", "NicClusterPolicy"]


def test_a_field_the_crd_does_not_know_is_caught() -> None:
    policy = rendered().nic_cluster_policy
    policy["spec"]["ofedDriver"]["upgradePolicy"]["drainSpec"] = {}
    assert any("drainSpec" in error for error in crd_errors(policy))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_device_plugin_configs_pass_the_operators_webhook_schemas(variant: str) -> None:
    policy = rendered(VARIANTS[variant]).nic_cluster_policy
    if "rdmaSharedDevicePlugin" in policy["spec"]:
        _webhook_validator("rdma_shared_device_plugin.json").validate(_plugin_config(policy, "rdmaSharedDevicePlugin"))
    if "sriovDevicePlugin" in policy["spec"]:
        config = _plugin_config(policy, "sriovDevicePlugin")
        _webhook_validator("sriov_network_device_plugin.json").validate(config)
        for resource in config["resourceList"]:
            _webhook_validator("net_device.json").validate({"selectors": resource["selectors"]})


def test_the_schemas_catch_a_broken_plugin_config() -> None:
    with pytest.raises(jsonschema.ValidationError):
        _webhook_validator("rdma_shared_device_plugin.json").validate({"configList": [{"resourceName": "x"}]})


def test_the_device_plugins_advertise_the_configured_resources() -> None:
    policy = rendered({"devicePlugins": ["sriov", "shared"], "rdmaSharedDevicePlugin": {"rdmaHcaMax": 8}}
                      ).nic_cluster_policy
    shared = _plugin_config(policy, "rdmaSharedDevicePlugin")["configList"][0]
    assert (shared["resourcePrefix"], shared["resourceName"], shared["rdmaHcaMax"]) == ("rdma", "shared_ib", 8)
    assert shared["selectors"] == {"vendors": ["15b3"], "linkTypes": ["infiniband"]}
    sriov = _plugin_config(policy, "sriovDevicePlugin")["resourceList"][0]
    assert (sriov["resourcePrefix"], sriov["resourceName"]) == ("rdma", "ib")
    assert sriov["selectors"] == [{"vendors": ["15b3"], "linkTypes": ["infiniband"], "isRdma": True}]


@pytest.mark.parametrize(("pools", "ids"), [
    ((H100,), ["101e"]),
    ((A100,), ["101c"]),
    ((A100, T4, H100), ["101c", "101e"]),
])
def test_the_nic_rule_matches_only_the_ib_vfs_of_the_pools(pools: tuple[dict[str, Any], ...], ids: list[str]) -> None:
    rule = rendered(pools=pools).node_feature_rule["spec"]["rules"][0]
    assert rule["labels"] == {IB_NODE_LABEL: "true"}
    assert rule["matchFeatures"] == [{"feature": "pci.device", "matchExpressions": {
        "vendor": {"op": "In", "value": ["15b3"]}, "device": {"op": "In", "value": ids}}}]


def test_the_policy_runs_on_ib_nodes_and_tolerates_every_pool_taint() -> None:
    result = rendered(pools=(H100, A100))
    spec = result.nic_cluster_policy["spec"]
    term = spec["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term == {"matchExpressions": [{"key": IB_NODE_LABEL, "operator": "In", "values": ["true"]}]}
    taints = [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
              {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoExecute"}]
    assert spec["tolerations"] == taints
    values = result.chart.values
    for listed in (values["node-feature-discovery"]["worker"]["tolerations"], values["operator"]["tolerations"]):
        assert all(taint in listed for taint in taints)


def test_the_ofed_driver_is_azure_ready() -> None:
    ofed = rendered().nic_cluster_policy["spec"]["ofedDriver"]
    assert ofed["image"] == "doca-driver"
    assert {"name": "OFED_BLACKLIST_MODULES_FILE", "value": "/host/etc/modprobe.d/blacklist-ofed-modules.conf"} \
        in ofed["env"]
    assert ofed["upgradePolicy"]["autoUpgrade"] is True and "safeLoad" not in ofed["upgradePolicy"]
    assert ofed["containerResources"][0]["name"] == "mofed-container"
    assert ofed["terminationGracePeriodSeconds"] == 300


def test_host_mofed_has_no_driver_container() -> None:
    assert "ofedDriver" not in rendered({"mofed": "host"}).nic_cluster_policy["spec"]


def test_ipoib_with_nv_ipam_gets_a_pool_and_the_ipam_plugin() -> None:
    result = rendered({"ipoib": IPOIB})
    pool, network = result.ipoib
    assert (pool["kind"], pool["metadata"]["namespace"]) == ("IPPool", "network-operator")
    assert json.loads(network["spec"]["ipam"]) == {"type": "nv-ipam", "poolName": "ipoib-pool"}
    spec = result.nic_cluster_policy["spec"]
    assert set(spec["secondaryNetwork"]) == {"cniPlugins", "multus", "ipoib"}
    assert spec["nvIpam"]["enableWebhook"] is False


def _value_paths(values: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if not isinstance(values, dict) or not values:
        return [prefix]
    return [path for key, value in values.items() for path in _value_paths(value, (*prefix, key))]


def _known(defaults: Any, path: tuple[str, ...]) -> bool:
    for key in path:
        if not isinstance(defaults, dict) or key not in defaults:
            return False
        defaults = defaults[key]
    return True


def test_chart_values_name_only_keys_of_the_charts_values_file() -> None:
    defaults = yaml.safe_load(reference_file("helm-values/network-operator-v26.4.1-values.yaml").read_text())
    values = rendered(pools=(H100, A100)).chart.values
    unknown = [".".join(path) for path in _value_paths(values) if not _known(defaults, path)]
    assert unknown == []
    assert values["nfd"] == {"enabled": True, "deployNodeFeatureRules": False}
    # a Helm list replaces the default list: the chart's own tolerations are kept
    assert all(t in values["node-feature-discovery"]["worker"]["tolerations"]
               for t in defaults["node-feature-discovery"]["worker"]["tolerations"])
    assert all(t in values["operator"]["tolerations"] for t in defaults["operator"]["tolerations"])


def test_the_values_keys_the_config_accepts_are_the_charts() -> None:
    defaults = yaml.safe_load(reference_file("helm-values/network-operator-v26.4.1-values.yaml").read_text())
    assert CHART_VALUE_KEYS == set(defaults)


def test_user_values_merge_last() -> None:
    values = rendered({"values": {"operator": {"resources": {"limits": {"memory": "256Mi"}}}}}).chart.values
    assert values["operator"]["resources"] == {"limits": {"memory": "256Mi"}}
    assert "tolerations" in values["operator"]


def test_the_shared_plugin_matches_azures_overlay() -> None:
    """Azure's rdma-shared-device-plugin overlay, with the plugin's default prefix made explicit."""
    overlay = yaml.safe_load(reference_file(
        "helm-values/aks-rdma-infiniband/nicclusterpolicy/rdma-shared-device-plugin-rdma.yaml").read_text())
    azure = json.loads(overlay["spec"]["rdmaSharedDevicePlugin"]["config"])
    azure["configList"][0].setdefault("resourcePrefix", "rdma")
    ours = _plugin_config(rendered({"devicePlugins": ["shared"]}).nic_cluster_policy, "rdmaSharedDevicePlugin")
    assert ours == azure


def test_no_network_without_ib_pools() -> None:
    assert render_network(parse_config({"aks": AKS, "pools": [T4]})) is None
    assert render_network(parse_config({"aks": AKS, "pools": [H100], "network": {"enabled": False}})) is None


def test_the_summary_says_how_gpudirect_rdma_is_wired() -> None:
    peermem = parse_config({"aks": AKS, "pools": [H100], "network": {"mofed": "host", "ipoib": IPOIB},
                            "operator": {"driver": {"rdma": {"enabled": True}}}})
    lines = network_summary(peermem)
    assert "the host's MOFED" in lines[1]
    assert lines[2].startswith("GPUDirect RDMA: legacy nvidia-peermem with the host's MOFED")
    assert lines[3] == "IPoIB network aks-infiniband on ibP257p0s0"
    assert network_summary(parse_config({"aks": AKS, "pools": [T4]})) == []
