"""The `network` section: defaults from the pools, the GPU side it implies, and its errors with field and fix."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}
A100 = {"name": "a100", "vmSize": "Standard_ND96amsr_A100_v4"}
T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}


def document(*pools: dict[str, Any], **sections: Any) -> dict[str, Any]:
    return {"aks": AKS, "pools": list(pools), **sections}


def problems(doc: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as error:
        parse_config(doc)
    return {problem.path: problem.message for problem in error.value.problems}


def test_an_infiniband_pool_turns_the_network_operator_on_and_the_gpu_nfd_off() -> None:
    config = parse_config(document(H100, A100))
    assert config.network.enabled is True
    assert config.network.vf_device_ids == ("101e", "101c")
    assert config.nfd.enabled is False
    assert config.operator.driver.kernel_module_type == "open"  # DMA-BUF by default
    assert config.operator.driver.rdma.enabled is False


def test_without_infiniband_nothing_changes() -> None:
    config = parse_config(document(T4))
    assert config.network.enabled is None and config.nfd.enabled is True
    assert parse_config({}).network.enabled is None


def test_the_user_can_turn_it_off() -> None:
    config = parse_config(document(H100, network={"enabled": False}))
    assert config.network.enabled is False and config.nfd.enabled is True


def test_the_effective_config_is_stable() -> None:
    config = parse_config(document(H100, network={"mofed": "host"}, operator={"driver": {"rdma": {"enabled": True}}}))
    assert parse_config(config) == config
    assert parse_config(config.to_document()) == config


def test_host_mofed_gives_legacy_peermem_use_host_mofed() -> None:
    config = parse_config(document(H100, network={"mofed": "host"}, operator={"driver": {"rdma": {"enabled": True}}}))
    assert config.operator.driver.rdma.use_host_mofed is True


def test_legacy_peermem_with_the_operators_mofed_is_accepted() -> None:
    config = parse_config(document(H100, operator={"driver": {"rdma": {"enabled": True}}}))
    assert config.operator.driver.rdma.enabled and not config.operator.driver.rdma.use_host_mofed


@pytest.mark.parametrize(("doc", "path", "words"), [
    (document(T4, network={"enabled": True}), "network.enabled", "no pool has InfiniBand"),
    (document(T4, operator={"driver": {"rdma": {"enabled": True, "useHostMofed": True}}}),
     "operator.driver.rdma.enabled", "InfiniBand VM size"),
    (document(H100, network={"enabled": False}, operator={"driver": {"rdma": {"enabled": True}}}),
     "operator.driver.rdma.enabled", "useHostMofed: true"),
    (document(H100, nfd={"enabled": True}), "nfd.enabled", "two NFDs"),
    (document(H100, network={"ipoib": {}}), "network.ipoib.ipPool", "ipPool"),
    (document(H100, network={"sriovDevicePlugin": {"resourceName": "rdma-ib"}}),
     "network.sriovDevicePlugin.resourceName", "letters, digits and '_'"),
    (document(H100, network={"rdmaSharedDevicePlugin": {"resourceName": "rdma/shared"}}),
     "network.rdmaSharedDevicePlugin.resourceName", "resourcePrefix"),
    (document(H100, network={"sriovDevicePlugin": {"resourcePrefix": "Not_A_Domain"}}),
     "network.sriovDevicePlugin.resourcePrefix", "DNS subdomain"),
    (document(H100, network={"ofedDriver": {"upgradePolicy": {"autoUpgrade": False, "safeLoad": True}}}),
     "network.ofedDriver.upgradePolicy", "safeLoad only works with autoUpgrade"),
    (document(H100, network={"devicePlugins": ["sriov", "shared"],
                             "rdmaSharedDevicePlugin": {"resourceName": "ib"}}), "network", "different resourceName"),
    (document(H100, network={"vfDeviceIds": ["101E"]}), "network.vfDeviceIds", "lower-case hex"),
    (document(H100, network={"ipoib": {"ipPool": {"subnet": "10.0.0.0/24", "gateway": "10.1.0.1"}}}),
     "network.ipoib.ipPool", "outside subnet"),
    (document(H100, network={"ipoib": {"ipam": "{not json"}}), "network.ipoib.ipam", "not JSON"),
    (document(H100, network={"values": {"operatr": {}}}), "network.values", "operatr"),
])
def test_errors_name_the_field_and_the_fix(doc: dict[str, Any], path: str, words: str) -> None:
    found = problems(doc)
    assert path in found, found
    assert words in found[path]


# -- every default image is the one the chart release we claim pairs with ----------------------------------------

#: Our image field -> the component's key in the release's own list (Mellanox/network-operator hack/release.yaml).
RELEASE_KEYS = {
    "ofed_driver.image": "Mofed",
    "rdma_shared_device_plugin.image": "RdmaSharedDevicePlugin",
    "sriov_device_plugin.image": "SriovDevicePlugin",
    "multus_image": "Multus",
    "cni_plugins_image": "CniPlugins",
    "ipoib_image": "Ipoib",
    "nv_ipam_image": "nvIpam",
    "doca_telemetry_image": "docaTelemetryService",
}


def test_every_default_image_is_the_one_the_claimed_chart_release_pairs_with() -> None:
    """Mellanox/network-operator v26.4.1 hack/release.yaml (read from ../shared/reference/data): the DOCA driver
    of chart 26.4.1 is `doca3.4.1-26.04-1.1.0.0-1` (26.4.0 paired `doca3.4.0-26.04-0.8.6.0-0`), and every other
    component image is the release's."""
    import yaml

    from gpu_operator.config.network import CHART_VERSION, NetworkSpec
    from tests.support.reference import reference_file

    release = yaml.safe_load(reference_file(f"network-operator/release-v{CHART_VERSION}.yaml").read_text())
    assert release["NetworkOperator"]["version"] == f"v{CHART_VERSION}"
    spec = NetworkSpec()
    for field, key in RELEASE_KEYS.items():
        image = spec
        for part in field.split("."):
            image = getattr(image, part)
        expected = {name: release[key][name] for name in ("repository", "image", "version")}
        assert image.to_spec() == expected, field
