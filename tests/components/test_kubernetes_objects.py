"""`register_chart` under Pulumi mocks: each chart source, for each of the three charts, gives `helm.v4.Chart` the
inputs Helm needs for it (a name and `repositoryOpts.repo`; an `oci://` reference; a local path and no version).
`register_object` and `register_chart` register what the API server stores (quantities, fieldRefs).

The charts come through their own components (NodeFeatureDiscovery, NetworkOperator, DraDriver) from a config
document, so the whole way from `<section>.chart` to the Chart resource is covered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from gpu_operator.components import DraDriver, NetworkOperator
from gpu_operator.components.kubernetes_objects import register_chart, register_object
from gpu_operator.components.node_feature_discovery import NodeFeatureDiscovery
from gpu_operator.config import parse_config
from gpu_operator.render.helm_chart import HelmChart
from gpu_operator.render.nfd import nfd_chart
from tests.support.pulumi_mocks import Recording, run_program
from tests.support.reference import REPO_ROOT, reference_chart

CHART = "kubernetes:helm.sh/v4:Chart"
AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}


def _nfd(document: dict[str, Any]) -> Callable[[k8s.Provider], object]:
    def install(provider: k8s.Provider) -> object:
        spec = nfd_chart(parse_config(document))
        assert spec is not None
        return NodeFeatureDiscovery("nfd", {"chart": spec, "provider": provider})
    return install


def _network(document: dict[str, Any]) -> Callable[[k8s.Provider], object]:
    document = {"aks": AKS, "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}], **document}
    return lambda provider: NetworkOperator("net", {"provider": provider, "config": document})


def _dra(document: dict[str, Any]) -> Callable[[k8s.Provider], object]:
    document = {"aks": AKS, "operator": {"driver": {"version": "580.95.05"}},
                "pools": [{"name": "h100dra", "vmSize": "Standard_ND96isr_H100_v5", "gpuAllocation": "dra"}],
                **document}
    return lambda provider: DraDriver("dra", {"provider": provider, "config": document})


#: section → (how its component is made from a document, the chart's name, its published file, its version)
CHARTS: dict[str, tuple[Callable[[dict[str, Any]], Callable[[k8s.Provider], object]], str, str, str]] = {
    "nfd": (_nfd, "node-feature-discovery", "node-feature-discovery-0.19.0.tgz", "0.19.0"),
    "network": (_network, "network-operator", "network-operator-26.4.1.tgz", "26.4.1"),
    "dra": (_dra, "dra-driver-nvidia-gpu", "dra-driver-nvidia-gpu-0.4.1.tgz", "0.4.1"),
}

#: The upstream homes, as the Chart resource is given them: (chart, repositoryOpts.repo or None)
UPSTREAM: dict[str, tuple[str, str | None]] = {
    "nfd": ("oci://registry.k8s.io/nfd/charts/node-feature-discovery", None),
    "network": ("network-operator", "https://helm.ngc.nvidia.com/nvidia"),
    "dra": ("oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", None),
}


def _chart_inputs(section: str, source: dict[str, str] | None) -> dict[str, Any]:
    make, *_ = CHARTS[section]
    document: dict[str, Any] = {section: {"chart": source}} if source is not None else {}

    def program() -> None:
        make(document)(k8s.Provider("cluster", kubeconfig="{}"))

    recording: Recording = run_program(program)
    [chart] = recording.of_type(CHART)
    return chart.inputs


@pytest.fixture(autouse=True)
def _from_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)


@pytest.mark.parametrize("section", CHARTS)
def test_upstream_by_default(section: str) -> None:
    inputs = _chart_inputs(section, None)
    chart, repo = UPSTREAM[section]
    assert inputs["chart"] == chart
    assert inputs.get("repositoryOpts", {}).get("repo") == repo
    assert inputs["version"] == CHARTS[section][3]


@pytest.mark.parametrize("section", CHARTS)
def test_a_helm_repository_mirror(section: str) -> None:
    inputs = _chart_inputs(section, {"repository": "https://charts.example.com/mirror/"})
    _, name, _, version = CHARTS[section]
    assert (inputs["chart"], inputs["repositoryOpts"], inputs["version"]) == (
        name, {"repo": "https://charts.example.com/mirror"}, version)


@pytest.mark.parametrize("section", CHARTS)
def test_an_oci_mirror(section: str) -> None:
    inputs = _chart_inputs(section, {"oci": "oci://mirror.example.com/helm"})
    _, name, _, version = CHARTS[section]
    assert (inputs["chart"], inputs["version"]) == (f"oci://mirror.example.com/helm/{name}", version)
    assert "repositoryOpts" not in inputs


@pytest.mark.parametrize("section", CHARTS)
def test_a_local_chart_is_installed_as_it_is(section: str) -> None:
    _, _, file_name, _ = CHARTS[section]
    reference_chart(file_name)
    path = f"../shared/reference/charts/{file_name}"
    inputs = _chart_inputs(section, {"path": path})
    assert inputs["chart"] == path
    assert "version" not in inputs and "repositoryOpts" not in inputs


@pytest.mark.parametrize("section", CHARTS)
def test_the_values_do_not_depend_on_the_source(section: str) -> None:
    upstream = _chart_inputs(section, None)
    mirrored = _chart_inputs(section, {"oci": "oci://mirror.example.com/helm"})
    assert mirrored["values"] == upstream["values"]
    assert mirrored["namespace"] == upstream["namespace"]


def test_objects_and_chart_values_are_registered_as_the_api_server_stores_them() -> None:
    """Whatever a component hands over (here an object and values no render made), the quantities go in the
    server's spelling and a fieldRef with the server's apiVersion, so refresh and adoption see no difference."""
    container = {"name": "c", "image": "i", "resources": {"limits": {"memory": "1024Mi"}, "requests": {"cpu": "0.5"}},
                 "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}
    daemonset = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds", "namespace": "n"},
                 "spec": {"selector": {"matchLabels": {"app": "ds"}},
                          "template": {"metadata": {"labels": {"app": "ds"}}, "spec": {"containers": [container]}}}}
    chart = nfd_chart(parse_config({"nfd": {"values": {"worker": {"resources": {"limits": {"memory": "2048Mi"}}}}}}))
    assert isinstance(chart, HelmChart)

    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        options = pulumi.ResourceOptions(provider=provider)
        register_object("p", daemonset, options)
        register_chart("p", chart, options)

    recording = run_program(program)
    [registered] = recording.of_type("kubernetes:apps/v1:DaemonSet")
    [stored] = registered.inputs["spec"]["template"]["spec"]["containers"]
    assert stored["resources"] == {"limits": {"memory": "1Gi"}, "requests": {"cpu": "500m"}}
    assert stored["env"][0]["valueFrom"]["fieldRef"] == {"apiVersion": "v1", "fieldPath": "spec.nodeName"}
    [helm] = recording.of_type(CHART)
    assert helm.inputs["values"]["worker"]["resources"] == {"limits": {"memory": "2Gi"}}
    assert container["resources"]["limits"]["memory"] == "1024Mi"  # the caller's object is not changed


def _chart_child(type_: str, props: dict[str, Any]) -> pulumi.ResourceTransformResult | None:
    from gpu_operator.components.kubernetes_objects import stored_chart_object

    return stored_chart_object(pulumi.ResourceTransformArgs(True, type_, "nfd:gpu-operator/worker", props,
                                                            pulumi.ResourceOptions()))


def test_a_charts_objects_are_registered_in_stored_form() -> None:
    # NFD 0.19's templates write fieldRef without apiVersion; the engine hands numbers over as floats
    container = {"name": "worker", "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                 "resources": {"limits": {"cpu": 2.0, "memory": "1024Mi"}}}
    props = {"metadata": {"name": "worker"}, "spec": {"template": {"spec": {"containers": [container]}}}}
    result = _chart_child("kubernetes:apps/v1:DaemonSet", props)
    assert result is not None
    [stored] = result.props["spec"]["template"]["spec"]["containers"]
    assert stored["env"][0]["valueFrom"]["fieldRef"] == {"apiVersion": "v1", "fieldPath": "spec.nodeName"}
    assert stored["resources"]["limits"] == {"cpu": "2", "memory": "1Gi"}


@pytest.mark.parametrize("type_, props", [
    ("kubernetes:helm.sh/v4:Chart", {"values": {}}),          # the chart itself is not an object
    ("pulumi:providers:kubernetes", {}),
    ("kubernetes:apps/v1:DaemonSet", {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "resources": {"limits": {"memory": "lots"}}}]}}}}),  # the server judges a bad quantity
])
def test_what_is_no_chart_object_or_no_quantity_is_left_as_it_is(type_: str, props: dict[str, Any]) -> None:
    assert _chart_child(type_, props) is None
