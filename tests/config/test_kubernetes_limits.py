"""Numbers at the limits Kubernetes and AKS set: each accepted at the edge and refused one past it.

* Percentages: a DaemonSet's `maxUnavailable` is at most 100% and not 0 while it surges no pods (apps/validation
  `ValidateRollingUpdateDaemonSet`); the driver upgrade's `maxUnavailable` at 0 admits no node ever
  (k8s-operator-libs pkg/upgrade common_manager.go `GetUpgradesAvailable`); AKS's `maxSurge` adds 1 node to 100%.
* Whole numbers fit the integer Kubernetes stores: int64 everywhere, int32 where the CRD says so (probe timings).
* AKS: an OS disk of 0 (the VM size's default) or at least the node image's 30 GB, up to 2048; a pool no newer
  than its control plane; each availability zone once.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_operator.config import ConfigError, GpuStackConfig, parse_config
from tests.config.test_parsed_strings import nested
from tests.support.reference import reference_file

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}
INT64_MAX, INT32_MAX = 2**63 - 1, 2**31 - 1


def problems(document: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    return {p.path: p.message for p in caught.value.problems}


def pool(**fields: Any) -> dict[str, Any]:
    return {"aks": AKS, "pools": [{**H100, **fields}], "network": {"enabled": False}}


PERCENT_PATHS = {
    "operator.driver.upgradePolicy.maxUnavailable": "nodes",
    "operator.daemonsets.rollingUpdate.maxUnavailable": "nodes",
}


@pytest.mark.parametrize("path", PERCENT_PATHS)
@pytest.mark.parametrize("value", ["100%", "1%", "1", 1, "25%"])
def test_percentages_up_to_100_and_counts_from_1_are_accepted(path: str, value: Any) -> None:
    if path.endswith("rollingUpdate.maxUnavailable") and isinstance(value, int):
        value = str(value)  # the CRD types this one as a string
    parse_config(nested(path, value))


@pytest.mark.parametrize("path", PERCENT_PATHS)
@pytest.mark.parametrize("value", ["101%", "250%"])
def test_a_percentage_over_100_is_refused(path: str, value: str) -> None:
    assert problems(nested(path, value))[path] == f"{value} is more than 100% of the nodes: give at most '100%'"


@pytest.mark.parametrize("value", [0, "0", "0%"])
def test_a_driver_upgrade_max_unavailable_of_0_is_refused_as_never(value: Any) -> None:
    path = "operator.driver.upgradePolicy.maxUnavailable"
    assert problems(nested(path, value))[path] == (
        f"{value!r} lets no node be unavailable, so no driver upgrade would ever start: give at least 1 (or '1%'), "
        "or set autoUpgrade: false to stop driver upgrades on purpose")


@pytest.mark.parametrize("value", ["0", "0%"])
def test_a_daemonset_max_unavailable_of_0_is_refused(value: str) -> None:
    path = "operator.daemonsets.rollingUpdate.maxUnavailable"
    assert "the API server refuses it for a DaemonSet without maxSurge" in problems(nested(path, value))[path]


@pytest.mark.parametrize("value", [True, "-1", "1.5", "ten%", "１"])
def test_what_is_neither_a_count_nor_a_percentage_is_refused(value: Any) -> None:
    path = "operator.driver.upgradePolicy.maxUnavailable"
    assert "must be a number of nodes such as 1 or a percentage such as '25%'" in problems(nested(path, value))[path]


@pytest.mark.parametrize("surge", ["1", "100%", "33%"])
def test_aks_max_surge_from_one_node_to_100_percent_is_accepted(surge: str) -> None:
    config = parse_config(pool(upgradeSettings={"maxSurge": surge}))
    assert config.pools[0].upgrade_settings is not None and config.pools[0].upgrade_settings.max_surge == surge


@pytest.mark.parametrize(("surge", "why"), [
    ("101%", "101% is more than 100% of the pool's nodes"),
    ("0", "adds no node, so AKS could not upgrade the pool"),
    ("0%", "adds no node, so AKS could not upgrade the pool"),
])
def test_aks_max_surge_past_its_limits_is_refused(surge: str, why: str) -> None:
    assert why in problems(pool(upgradeSettings={"maxSurge": surge}))["pools[0].upgradeSettings.maxSurge"]


INT64_PATHS = [
    "operator.driver.upgradePolicy.drain.timeoutSeconds",
    "operator.driver.upgradePolicy.podDeletion.timeoutSeconds",
    "operator.driver.upgradePolicy.waitForCompletion.timeoutSeconds",
    "operator.driver.upgradePolicy.maxParallelUpgrades",
    "controller.validationTimeoutSeconds",
    "network.ofedDriver.terminationGracePeriodSeconds",
    "network.ofedDriver.upgradePolicy.drain.timeoutSeconds",
]


@pytest.mark.parametrize("path", INT64_PATHS)
def test_int64_fields_take_the_largest_int64_and_refuse_one_more(path: str) -> None:
    GpuStackConfig.model_validate(nested(path, INT64_MAX))
    assert problems(nested(path, INT64_MAX + 1))[path] == (
        f"{INT64_MAX + 1} does not fit the 64-bit integer Kubernetes stores here: give at most {INT64_MAX}")


def test_negative_overflow_names_the_lower_bound() -> None:
    path = "operator.daemonsets.tolerations"
    toleration = {"key": "a", "operator": "Exists", "tolerationSeconds": -(2**63) - 1}
    assert problems(nested(path, [toleration]))[f"{path}[0].tolerationSeconds"].endswith(f"give at least {-(2**63)}")


def test_whole_numbers_inside_lists_are_strict_and_bounded_too() -> None:
    path = "operator.daemonsets.podSecurityContext.supplementalGroups"
    assert problems(nested(path, ["5", True, 2**64])) == {
        f"{path}[0]": "must be a whole number, unquoted, got '5'",
        f"{path}[1]": "must be a whole number, unquoted, got true",
        f"{path}[2]": f"{2**64} does not fit the 64-bit integer Kubernetes stores here: give at most {INT64_MAX}",
    }


def _crd_int32_paths() -> list[str]:
    """The ClusterPolicy CRD's `format: int32` fields under spec (the upstream file, v26.7.0)."""
    crd = yaml.safe_load(reference_file("crds/nvidia.com_clusterpolicies.yaml").read_text(encoding="utf-8"))
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    found: list[str] = []

    def walk(node: dict[str, Any], path: list[str]) -> None:
        if node.get("type") == "integer" and node.get("format") == "int32":
            found.append(".".join(path))
        for key, child in (node.get("properties") or {}).items():
            walk(child, [*path, key])

    walk(spec, ["operator"])
    return found


def test_every_int32_field_of_the_clusterpolicy_crd_refuses_a_64_bit_number() -> None:
    """Walks the upstream CRD: each `format: int32` field takes 2^31-1 (where its range allows) and refuses 2^31."""
    paths = _crd_int32_paths()
    assert "operator.driver.startupProbe.periodSeconds" in paths and "operator.dcgm.hostPort" in paths
    for path in paths:
        assert path in problems(nested(path, INT32_MAX + 1)), path
        if not path.endswith("hostPort"):
            GpuStackConfig.model_validate(nested(path, INT32_MAX))


@pytest.mark.parametrize("probe", ["startupProbe", "livenessProbe", "readinessProbe"])
def test_ofed_probe_timings_are_pod_probe_int32s(probe: str) -> None:
    path = f"network.ofedDriver.{probe}"
    GpuStackConfig.model_validate(nested(path, {"initialDelaySeconds": INT32_MAX, "periodSeconds": 1}))
    found = problems(nested(path, {"initialDelaySeconds": INT32_MAX + 1, "periodSeconds": 1}))
    assert found[f"{path}.initialDelaySeconds"].startswith(f"{INT32_MAX + 1} does not fit the 32-bit integer")


@pytest.mark.parametrize("size", [None, 0, 30, 128, 2048])
def test_os_disk_of_0_or_30_to_2048_gb_is_accepted(size: int | None) -> None:
    assert parse_config(pool(osDiskSizeGB=size)).pools[0].os_disk_size_gb == size


@pytest.mark.parametrize(("size", "why"), [
    (29, "29 GB is smaller than the node image (30 GB), which Azure refuses: give at least 30, or 0"),
    (1, "1 GB is smaller than the node image (30 GB)"),
    (2049, "Input should be less than or equal to 2048"),
    (-1, "Input should be greater than or equal to 0"),
])
def test_os_disk_past_azures_limits_is_refused(size: int, why: str) -> None:
    assert why in problems(pool(osDiskSizeGB=size))["pools[0].osDiskSizeGB"]


@pytest.mark.parametrize(("cluster", "pool_version"), [
    ("1.34", "1.34"), ("1.34", "1.34.9"), ("1.34.2", "1.34.2"), ("1.34.2", "1.34"), ("1.34", "1.31"),
    ("1.35.1", "1.34.12"),
])
def test_a_pool_at_or_behind_its_control_plane_is_accepted(cluster: str, pool_version: str) -> None:
    document = pool(orchestratorVersion=pool_version)
    document["aks"] = {**AKS, "kubernetesVersion": cluster}
    parse_config(document)


@pytest.mark.parametrize(("cluster", "pool_version"), [("1.34", "1.35"), ("1.34.2", "1.34.3"), ("1.33.9", "1.34")])
def test_a_pool_newer_than_its_control_plane_is_refused(cluster: str, pool_version: str) -> None:
    document = pool(orchestratorVersion=pool_version)
    document["aks"] = {**AKS, "kubernetesVersion": cluster}
    assert problems(document)["pools[0].orchestratorVersion"] == (
        f"{pool_version} is newer than the cluster's control plane (aks.kubernetesVersion {cluster}), which AKS "
        f"refuses: upgrade aks.kubernetesVersion to {pool_version} first, or give the pool {cluster} or older")


@pytest.mark.parametrize("zones", [["1"], [1, 2, 3], ["3", "1"]])
def test_distinct_zones_are_accepted(zones: list[Any]) -> None:
    assert parse_config(pool(availabilityZones=zones)).pools[0].availability_zones == tuple(map(str, zones))


@pytest.mark.parametrize(("where", "document"), [
    ("pools[0].availabilityZones", pool(availabilityZones=[1, "1"])),
    ("aks.systemPool.availabilityZones",
     {"aks": {**AKS, "create": True, "location": "westeurope", "systemPool": {"availabilityZones": ["2", "2"]}}}),
])
def test_a_zone_listed_twice_is_refused(where: str, document: dict[str, Any]) -> None:
    assert problems(document)[where].startswith("zone ")
    assert "is listed twice: list each zone once" in problems(document)[where]


TOLERATIONS = "operator.daemonsets.tolerations"


@pytest.mark.parametrize("toleration", [
    {"operator": "Exists"},                                              # every taint
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "sku", "value": "gpu"},                                      # operator defaults to Equal
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
])
def test_tolerations_the_api_server_takes_are_accepted(toleration: dict[str, Any]) -> None:
    parse_config(nested(TOLERATIONS, [toleration]))


@pytest.mark.parametrize(("toleration", "why"), [
    ({"key": "a", "operator": "Exists", "value": "x"}, "operator Exists takes no value (got 'x')"),
    ({"operator": "Equal", "value": "x"}, "a toleration without key must have operator: Exists"),
    ({"value": "x"}, "a toleration without key must have operator: Exists"),
    ({"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30},
     "tolerationSeconds applies to effect NoExecute only"),
    ({"key": "bad key", "operator": "Exists"}, "key 'bad key' is not a taint key"),
    ({"key": "sku", "operator": "Equal", "value": "g p u"}, "value 'g p u' is not a taint value"),
])
def test_a_toleration_the_api_server_refuses_is_refused(toleration: dict[str, Any], why: str) -> None:
    """k8s.io/kubernetes pkg/apis/core/validation `ValidateTolerations`, the same rules in config."""
    assert problems(nested(TOLERATIONS, [toleration]))[f"{TOLERATIONS}[0]"].startswith(why)


@pytest.mark.parametrize("tags", [{"team": "ml"}, {"t" * 512: "v" * 256}, {f"t{i}": "x" for i in range(50)},
                                  {"cost center": "a/b"}])
def test_azure_tags_within_azures_rules_are_accepted(tags: dict[str, str]) -> None:
    parse_config(pool(tags=tags))
    parse_config({"aks": {**AKS, "tags": tags}})


@pytest.mark.parametrize(("tags", "why"), [
    ({"": "x"}, "tag name '' must have 1 to 512 characters"),
    ({"t" * 513: "x"}, "must have 1 to 512 characters"),
    ({"team": "v" * 257}, "the value of tag 'team' has 257 characters; Azure takes at most 256"),
    ({f"t{i}": "x" for i in range(51)}, "51 tags: an Azure resource takes at most 50"),
    ({"a/b": "x"}, "holds /, which Azure refuses in tag names"),
    ({"cost<center>": "x"}, "holds < >, which Azure refuses"),
    ({"microsoft.owner": "x"}, "starts with a prefix Azure reserves"),
])
def test_azure_tags_past_azures_rules_are_refused(tags: dict[str, str], why: str) -> None:
    assert why in problems(pool(tags=tags))["pools[0].tags"]
    assert why in problems({"aks": {**AKS, "tags": tags}})["aks.tags"]
