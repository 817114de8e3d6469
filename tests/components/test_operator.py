"""GpuOperator under Pulumi mocks: the resource tree, providers, ordering and outputs."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from gpu_operator.components import GpuOperator

from gpu_operator.config import ConfigError, load_config
from gpu_operator.render import render_operands
from tests.support.pulumi_mocks import Recording, run_program

OPERATOR_TOKEN = "gpu-operator:index:GpuOperator"
OPERAND_TOKEN = "gpu-operator:index:GpuOperand"
NFD_TOKEN = "gpu-operator:index:NodeFeatureDiscovery"
CHART = "kubernetes:helm.sh/v4:Chart"


def _program(config: Any = None, outputs: dict[str, Any] | None = None, **extra: Any):
    def program() -> pulumi.Output[Any]:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        operator = GpuOperator("gpu", {"provider": provider, **({"config": config} if config else {}), **extra})
        if outputs is None:
            return operator.namespace
        return pulumi.Output.all(
            operator.namespace, operator.gpu_resource_names, operator.node_selector_labels,
            operator.runtime_class_name, operator.daemonset_names,
        ).apply(lambda values: outputs.update(zip(
            ["namespace", "gpu_resource_names", "node_selector_labels", "runtime_class_name", "daemonset_names"],
            values,
        )))
    return program


@pytest.fixture(scope="module")
def recording() -> Recording:
    return run_program(_program())


def test_tree_operator_then_operands_then_objects(recording: Recording) -> None:
    by_urn = recording.by_urn()
    operator = recording.of_type(OPERATOR_TOKEN)
    assert len(operator) == 1
    operands = recording.of_type(OPERAND_TOKEN)
    assert operands and all(o.parent == operator[0].urn for o in operands)
    nfd = recording.of_type(NFD_TOKEN)
    assert len(nfd) == 1 and nfd[0].parent == operator[0].urn
    for resource in recording.of_type("kubernetes:"):
        expected = NFD_TOKEN if resource.type == CHART else OPERAND_TOKEN
        assert by_urn[resource.parent].type == expected, resource.name


def test_every_kubernetes_resource_uses_the_explicit_provider(recording: Recording) -> None:
    provider = recording.of_type("pulumi:providers:kubernetes")
    assert len(provider) == 1
    for resource in recording.of_type("kubernetes:"):
        assert resource.provider.startswith(provider[0].urn + "::"), resource.name


def test_no_duplicate_names_and_one_resource_per_rendered_object(recording: Recording) -> None:
    urns = [r.urn for r in recording.registrations]
    assert len(urns) == len(set(urns))
    objects = [o for operand in render_operands(load_config(None)) for o in operand.objects]
    assert len(recording.of_type("kubernetes:")) == len(objects) + 1  # + the NFD chart


def test_operands_depend_on_each_other_in_state_order(recording: Recording) -> None:
    operands = recording.of_type(OPERAND_TOKEN)
    states = [o.inputs["state"] for o in operands]
    assert states == [operand.state for operand in render_operands(load_config(None))]
    children = {o.urn: {r.urn for r in recording.registrations if r.parent == o.urn} for o in operands}
    for before, after in zip(operands, operands[1:]):
        assert children[before.urn] <= set(after.dependencies), f"{after.name} does not wait for {before.name}"


def test_nfd_chart_comes_after_the_prerequisites_and_before_the_driver(recording: Recording) -> None:
    chart = recording.of_type(CHART)[0]
    assert chart.inputs["chart"] == "oci://registry.k8s.io/nfd/charts/node-feature-discovery"
    assert chart.inputs["version"] == "0.19.0"
    assert chart.inputs["namespace"] == "gpu-operator"
    values = chart.inputs["values"]
    assert values["worker"]["config"]["sources"]["pci"]["deviceLabelFields"] == ["vendor"]
    assert values["master"]["config"]["extraLabelNs"] == ["nvidia.com"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["worker"]["tolerations"]
    nfd = recording.of_type(NFD_TOKEN)[0]
    prerequisites = recording.named("gpu-prerequisites")
    prerequisite_children = {r.urn for r in recording.registrations if r.parent == prerequisites.urn}
    assert prerequisite_children <= set(nfd.dependencies)
    driver = recording.named("gpu-driver")
    assert chart.urn in driver.dependencies


def test_nfd_disabled_installs_no_chart() -> None:
    recording = run_program(_program({"nfd": {"enabled": False}}))
    assert recording.of_type(CHART) == [] and recording.of_type(NFD_TOKEN) == []


def test_daemonsets_wait_for_their_operands_other_objects(recording: Recording) -> None:
    for ds in recording.of_type("kubernetes:apps/v1:DaemonSet"):
        siblings = {r.urn for r in recording.registrations if r.parent == ds.parent and r.urn != ds.urn}
        siblings -= {r.urn for r in recording.of_type("kubernetes:apps/v1:DaemonSet")}
        assert siblings <= set(ds.dependencies), ds.name


def test_typed_kinds_and_custom_resources(recording: Recording) -> None:
    types = {r.type for r in recording.of_type("kubernetes:")}
    assert CHART in types
    assert "kubernetes:apps/v1:DaemonSet" in types
    assert "kubernetes:monitoring.coreos.com/v1:ServiceMonitor" in types
    assert "kubernetes:node.k8s.io/v1:RuntimeClass" in types


def test_daemonsets_skip_await_unless_asked(recording: Recording) -> None:
    for ds in recording.of_type("kubernetes:apps/v1:DaemonSet"):
        assert ds.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    waited = run_program(_program(wait_for_daemonsets=True))
    for ds in waited.of_type("kubernetes:apps/v1:DaemonSet"):
        assert "pulumi.com/skipAwait" not in ds.inputs["metadata"].get("annotations", {})


def test_names_are_pinned_where_others_refer_to_them(recording: Recording) -> None:
    for resource in recording.of_type("kubernetes:"):
        if resource.type != CHART:
            assert resource.inputs["metadata"]["name"], resource.name


def test_outputs() -> None:
    outputs: dict[str, Any] = {}
    config = {"operator": {"devicePlugin": {"config": {"name": "sharing", "default": "x4"}}},
              "configs": {"devicePlugin": {"x4": {"sharing": {"timeSlicing": {
                  "renameByDefault": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}}}}
    run_program(_program(config, outputs))
    assert outputs["namespace"] == "gpu-operator"
    assert outputs["gpu_resource_names"] == ["nvidia.com/gpu", "nvidia.com/gpu.shared"]
    assert outputs["runtime_class_name"] == "nvidia"
    labels = outputs["node_selector_labels"]
    assert labels["nvidia.com/gpu.present"] == "true"
    assert labels["nvidia.com/gpu.deploy.driver"] == "true"
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "true"
    assert "nvidia-driver-daemonset" in outputs["daemonset_names"]


def test_bad_config_registers_nothing() -> None:
    bad = {"bogus": 1, "operator": {"mig": {"strategy": "maybe"}}}
    recording = Recording()
    with pytest.raises(ConfigError) as error:
        run_program(_program(bad), recording=recording)
    assert {p.path for p in error.value.problems} == {"bogus", "operator.mig.strategy"}
    assert [r.type for r in recording.registrations] == ["pulumi:providers:kubernetes"]


def test_depends_on_reaches_the_first_operand() -> None:
    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        gate = k8s.core.v1.ConfigMap("gate", metadata={"name": "gate"}, opts=pulumi.ResourceOptions(provider=provider))
        GpuOperator("gpu", {"provider": provider}, pulumi.ResourceOptions(depends_on=[gate]))

    recording = run_program(program)
    gate = recording.named("gate")
    assert gate.urn in recording.named("gpu-prerequisites").dependencies
