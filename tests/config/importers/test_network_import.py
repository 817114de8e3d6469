"""Importing Azure's NicClusterPolicy (base + each overlay) and Network Operator values, then rendering again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.importers import load_import
from gpu_operator.cli import main
from gpu_operator.config.importers.network import (
    ignored_network_values,
    import_network_manifests,
    import_network_values,
)
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


NETWORK_DEFAULTS = "helm-values/network-operator-v26.4.1-values.yaml"


def test_the_charts_own_default_values_import_and_render(capsys: pytest.CaptureFixture[str]) -> None:
    """network-operator 26.4.1 values.yaml as the chart ships it (`nfd: {enabled: true, deployNodeFeatureRules:
    true}`): every value but the NFD switches is carried into network.values, the rule switch is named as not
    imported (the render writes false), and the result renders with an InfiniBand pool."""
    path = reference_file(NETWORK_DEFAULTS)
    defaults = yaml.safe_load(path.read_text())
    assert defaults["nfd"] == {"enabled": True, "deployNodeFeatureRules": True}
    document = load_import(path)
    assert document["network"]["values"] == {key: value for key, value in defaults.items() if key != "nfd"}
    assert set(ignored_network_values(defaults)) == {"nfd.deployNodeFeatureRules"}
    config = parse_config({"aks": AKS, "pools": [POOL], **document})
    rendered = render_network(config)
    assert rendered is not None
    assert rendered.chart.values["nfd"] == {"enabled": True, "deployNodeFeatureRules": False}
    # the command line imports it and says what it left out
    assert main(["import-values", str(path)]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out) == document
    assert "note: nfd.deployNodeFeatureRules not imported: the render sets it false" in err


@pytest.mark.parametrize(("nfd", "noted"), [
    ({"enabled": True, "deployNodeFeatureRules": False}, set()),  # what the render writes: nothing to say
    ({"deployNodeFeatureRules": True}, {"nfd.deployNodeFeatureRules"}),  # the chart's default: not imported
    ({}, set()),
])
def test_the_nfd_switches_import_with_a_note_where_the_render_writes_another_value(
        nfd: dict[str, Any], noted: set[str]) -> None:
    assert import_network_values({"nfd": nfd, "upgradeCRDs": True}) == {"enabled": True,
                                                                         "values": {"upgradeCRDs": True}}
    assert set(ignored_network_values({"nfd": nfd})) == noted


@pytest.mark.parametrize(("nfd", "paths"), [
    ({"enabled": False, "deployNodeFeatureRules": True}, {"nfd.enabled"}),
    ({"deployNodeFeatureRules": "yes"}, {"nfd.deployNodeFeatureRules"}),
    ({"enabled": True, "worker": {}}, {"nfd.worker"}),
    ("on", {"nfd"}),
])
def test_network_values_the_render_cannot_honour_are_errors(nfd: Any, paths: set[str]) -> None:
    with pytest.raises(ConfigError) as error:
        import_network_values({"nfd": nfd})
    assert {p.path for p in error.value.problems} == paths
