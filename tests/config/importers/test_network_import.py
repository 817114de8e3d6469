"""Importing Azure's NicClusterPolicy (base + each overlay) and Network Operator values, then rendering again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.importers import load_import
from gpu_operator.config.importers.network import import_network_manifests, import_network_values
from gpu_operator.render.network import render_network
from tests.support.reference import reference_file
from tests.support.schemas import validate_objects

AZURE = "helm-values/aks-rdma-infiniband"
AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
#: Azure's scripts set no taint; the NicClusterPolicy then carries no tolerations.
POOL = {"name": "nd", "vmSize": "Standard_ND96asr_v4", "taints": []}
OVERLAYS = {
    "base": ["nicclusterpolicy/base-nic.yaml"],
    "rdma-shared-device-plugin": ["nicclusterpolicy/base-nic.yaml",
                                  "nicclusterpolicy/rdma-shared-device-plugin-rdma.yaml"],
    "sriov-device-plugin": ["nicclusterpolicy/base-nic.yaml", "nicclusterpolicy/sriov-device-plugin-sriov.yaml"],
    "ipoib": ["nicclusterpolicy/base-nic.yaml", "nicclusterpolicy/rdma-shared-device-plugin-rdma.yaml",
              "nicclusterpolicy/ipoib-ipoib.yaml", "nicclusterpolicy/ipoib-ipoib-network.yaml"],
}


def _manifests(files: list[str]) -> list[dict[str, Any]]:
    return [yaml.safe_load(reference_file(f"{AZURE}/{name}").read_text()) for name in files]


def _merged_policy(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for manifest in manifests:
        if manifest["kind"] == "NicClusterPolicy":
            spec.update(manifest["spec"])  # kustomize: each overlay adds its own top-level sections
    return spec


def _normalised(spec: dict[str, Any]) -> dict[str, Any]:
    """The policy with the operator's and plugins' defaults written out and JSON configs parsed."""
    spec = json.loads(json.dumps(spec))
    spec.get("ofedDriver", {}).setdefault("terminationGracePeriodSeconds", 300)
    if "rdmaSharedDevicePlugin" in spec:
        config = json.loads(spec["rdmaSharedDevicePlugin"]["config"])
        for entry in config["configList"]:
            entry.setdefault("resourcePrefix", "rdma")
        spec["rdmaSharedDevicePlugin"]["config"] = config
    if "sriovDevicePlugin" in spec:
        config = json.loads(spec["sriovDevicePlugin"]["config"])
        for entry in config["resourceList"]:
            if isinstance(entry["selectors"], dict):
                entry["selectors"] = [entry["selectors"]]
        spec["sriovDevicePlugin"]["config"] = config
    return spec


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_importing_azures_policy_and_rendering_gives_an_equivalent_object(overlay: str) -> None:
    manifests = _manifests(OVERLAYS[overlay])
    network = import_network_manifests(manifests)
    config = parse_config({"aks": AKS, "pools": [POOL], "network": network})
    rendered = render_network(config)
    assert rendered is not None
    assert _normalised(rendered.nic_cluster_policy["spec"]) == _normalised(_merged_policy(manifests))
    assert validate_objects(rendered.objects) == []
    azure_networks = [m for m in manifests if m["kind"] == "IPoIBNetwork"]
    if azure_networks:
        [ours] = [obj for obj in rendered.ipoib if obj["kind"] == "IPoIBNetwork"]
        assert ours["metadata"]["name"] == azure_networks[0]["metadata"]["name"]
        assert ours["spec"] == azure_networks[0]["spec"]


def test_a_multi_document_file_is_imported_as_the_network_section(tmp_path: Path) -> None:
    text = "\n---\n".join(reference_file(f"{AZURE}/{name}").read_text() for name in OVERLAYS["sriov-device-plugin"])
    path = tmp_path / "ncp.yaml"
    path.write_text(text)
    document = load_import(path)
    assert set(document) == {"network"} and document["network"]["devicePlugins"] == ["sriov"]


def test_azures_network_operator_values() -> None:
    document = load_import(reference_file(f"{AZURE}/network-operator-values.yaml"))
    assert document == {"network": {"enabled": True}}
    assert import_network_values({"operator": {"resources": {"limits": {"memory": "1Gi"}}}})["values"] == {
        "operator": {"resources": {"limits": {"memory": "1Gi"}}}}


@pytest.mark.parametrize(("change", "path"), [
    (lambda m: m["metadata"].update(name="other"), "[0].metadata.name"),
    (lambda m: m["spec"].update(tolerations=[{"key": "x", "operator": "Exists"}]), "spec.tolerations"),
    (lambda m: m["spec"].update(ibKubernetes={"image": "ib-kubernetes"}), "spec.ibKubernetes"),
    (lambda m: m["spec"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
     [0]["matchExpressions"][0].update(key="other"), "spec.nodeAffinity"),
])
def test_what_the_render_cannot_keep_is_an_error(change: Any, path: str) -> None:
    [base] = _manifests(OVERLAYS["base"])
    change(base)
    with pytest.raises(ConfigError) as error:
        import_network_manifests([base])
    assert path in {problem.path for problem in error.value.problems}


def test_ipoib_without_its_network_manifest_is_an_error() -> None:
    manifests = _manifests(OVERLAYS["ipoib"])[:-1]
    with pytest.raises(ConfigError, match="IPoIBNetwork"):
        import_network_manifests(manifests)


def test_network_values_that_would_break_the_one_nfd_rule_are_errors() -> None:
    with pytest.raises(ConfigError) as error:
        import_network_values({"nfd": {"enabled": False, "deployNodeFeatureRules": True}})
    assert {p.path for p in error.value.problems} == {"nfd.enabled", "nfd.deployNodeFeatureRules"}
