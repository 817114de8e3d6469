"""GpuOperator under Pulumi mocks: the resource tree, providers, ordering and outputs."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from gpu_operator.components import GpuOperator
from gpu_operator.components.component_args import ComponentArgsError
from gpu_operator.components.kubernetes_objects import logical_name

from gpu_operator.config import ConfigError, load_config, parse_config
from gpu_operator.render import render_operands
from tests.support.pulumi_mocks import Recording, run_program
from tests.support.reference import REPO_ROOT

OPERATOR_TOKEN = "gpu-operator:index:GpuOperator"
STASH = "pulumi:index:Stash"
OPERAND_TOKEN = "gpu-operator:index:GpuOperand"
NFD_TOKEN = "gpu-operator:index:NodeFeatureDiscovery"
CHART = "kubernetes:helm.sh/v4:Chart"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
SERVICE = "kubernetes:core/v1:Service"
#: Every operand with a Service on: the exporter, DCGM and the node status exporter, with ServiceMonitors.
MONITORED = {"cluster": {"prometheusOperator": True},
             "operator": {"dcgm": {"enabled": True}, "nodeStatusExporter": {"enabled": True}}}


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
    objects = [o for operand in render_operands(parse_config(None)) for o in operand.objects]
    assert len(recording.of_type("kubernetes:")) == len(objects) + 1  # + the NFD chart


def _children(recording: Recording, parent: Any) -> set[str]:
    return {r.urn for r in recording.registrations if r.parent == parent.urn}


def test_operands_come_after_the_prerequisites_side_by_side(recording: Recording) -> None:
    """Without waiting, creation order does nothing on the node (the validation init containers keep NVIDIA's
    order), so the operands are created side by side after the pre-requisites: no operand waits for another."""
    operands = recording.of_type(OPERAND_TOKEN)
    states = [o.inputs["state"] for o in operands]
    # side by side: the engine may receive the operands' registrations in any order after the pre-requisites
    assert states[0] == "pre-requisites"
    assert sorted(states) == sorted(operand.state for operand in render_operands(load_config(None)))
    prerequisites, *others = operands
    for operand in others:
        assert _children(recording, prerequisites) <= set(operand.dependencies), operand.name
        for other in others:
            assert not _children(recording, other) & set(operand.dependencies), f"{operand.name} waits for {other.name}"


def test_when_waiting_operands_depend_on_each_other_in_state_order() -> None:
    recording = run_program(_program(wait_for_daemonsets=True))
    operands = recording.of_type(OPERAND_TOKEN)
    for before, after in zip(operands, operands[1:]):
        assert _children(recording, before) <= set(after.dependencies), f"{after.name} does not wait for {before.name}"


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


@pytest.fixture(scope="module")
def monitored() -> Recording:
    return run_program(_program(MONITORED))


def test_daemonsets_wait_for_what_their_pods_need(monitored: Recording) -> None:
    companions = {SERVICE, "kubernetes:monitoring.coreos.com/v1:ServiceMonitor", DAEMONSET}
    checked = 0
    for ds in monitored.of_type(DAEMONSET):
        needed = {r.urn for r in monitored.registrations if r.parent == ds.parent and r.type not in companions}
        assert needed <= set(ds.dependencies), ds.name
        checked += bool(needed)
    assert checked >= 5


def test_services_are_neither_awaited_nor_prerequisites_of_their_daemonset(monitored: Recording) -> None:
    # pulumi-kubernetes awaits a Service with a selector until it targets a ready pod: only the DaemonSet's pods
    # can be targeted, so a Service the DaemonSet waited for would deadlock `pulumi up`
    services = [r for r in monitored.registrations if r.type == SERVICE]
    assert {s.inputs["metadata"]["name"] for s in services} == {
        "nvidia-dcgm-exporter", "nvidia-dcgm", "nvidia-node-status-exporter"}
    for service in services:
        assert service.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true", service.name
        assert service.inputs["spec"]["selector"], service.name
        for ds in monitored.of_type(DAEMONSET):
            assert service.urn not in ds.dependencies, (service.name, ds.name)
    monitors = monitored.of_type("kubernetes:monitoring.coreos.com/v1:ServiceMonitor")
    assert len(monitors) == 2
    for monitor in monitors:
        assert all(monitor.urn not in ds.dependencies for ds in monitored.of_type(DAEMONSET)), monitor.name
    # the exporter's Service keeps its own annotations next to skipAwait
    [exporter] = [s for s in services if s.inputs["metadata"]["name"] == "nvidia-dcgm-exporter"]
    assert exporter.inputs["metadata"]["annotations"]["prometheus.io/scrape"] == "true"


def test_services_skip_await_even_when_daemonsets_are_awaited() -> None:
    waited = run_program(_program(MONITORED, wait_for_daemonsets=True))
    services = [r for r in waited.registrations if r.type == SERVICE]
    assert len(services) == 3
    for service in services:
        assert service.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true", service.name


def test_typed_kinds_and_custom_resources(monitored: Recording) -> None:
    types = {r.type for r in monitored.of_type("kubernetes:")}
    assert CHART in types
    assert "kubernetes:apps/v1:DaemonSet" in types
    assert "kubernetes:monitoring.coreos.com/v1:ServiceMonitor" in types
    assert "kubernetes:node.k8s.io/v1:RuntimeClass" in types


def test_daemonsets_skip_await_unless_asked(recording: Recording) -> None:
    for ds in recording.of_type("kubernetes:apps/v1:DaemonSet"):
        assert ds.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    waited = run_program(_program(wait_for_daemonsets=True))
    on_delete = set()
    for ds in waited.of_type("kubernetes:apps/v1:DaemonSet"):
        annotations = ds.inputs["metadata"].get("annotations", {})
        driver = ds.inputs["metadata"]["labels"].get("app.kubernetes.io/component") == "nvidia-driver"
        if driver or ds.inputs["spec"].get("updateStrategy", {}).get("type") == "OnDelete":
            # nothing rolls an OnDelete DaemonSet (the driver's, under the controller): awaiting it hangs until the
            # provider's timeout; a driver that rolls itself takes minutes a node, which outlasts it too
            on_delete.add(ds.inputs["metadata"]["name"])
            assert annotations["pulumi.com/skipAwait"] == "true", ds.name
        else:
            assert "pulumi.com/skipAwait" not in annotations, ds.name
    assert "nvidia-driver-daemonset" in on_delete


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


def test_logical_names_do_not_depend_on_the_operand_and_alias_the_old_ones(recording: Recording) -> None:
    [driver] = [r for r in recording.of_type(DAEMONSET) if r.inputs["metadata"]["name"] == "nvidia-driver-daemonset"]
    assert driver.name == "gpu-daemonset-gpu-operator-nvidia-driver-daemonset"
    assert driver.alias_names == ("gpu-driver-daemonset-gpu-operator-nvidia-driver-daemonset",)
    objects = {o["metadata"]["name"] + o["kind"]: (operand.key, o)
               for operand in render_operands(parse_config(None)) for o in operand.objects}
    for resource in recording.of_type("kubernetes:"):
        if resource.type == CHART:
            continue
        key, obj = objects[resource.inputs["metadata"]["name"] + resource.type.rsplit(":", 1)[1]]
        assert resource.name == logical_name("gpu", obj)
        assert resource.alias_names == (logical_name(f"gpu-{key}", obj),), resource.name


def test_a_renamed_operator_keeps_its_objects_through_aliases() -> None:
    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        GpuOperator("fleet", {"provider": provider},
                    pulumi.ResourceOptions(aliases=[pulumi.Alias(name="gpu")]))

    recording = run_program(program)
    [driver] = [r for r in recording.of_type(DAEMONSET) if r.inputs["metadata"]["name"] == "nvidia-driver-daemonset"]
    assert driver.name == "fleet-daemonset-gpu-operator-nvidia-driver-daemonset"
    assert set(driver.alias_names) == {
        "fleet-driver-daemonset-gpu-operator-nvidia-driver-daemonset",   # this name, earlier releases
        "gpu-daemonset-gpu-operator-nvidia-driver-daemonset",            # the old name
        "gpu-driver-daemonset-gpu-operator-nvidia-driver-daemonset",     # the old name, earlier releases
    }
    assert recording.named("fleet").alias_names == ("gpu",)


def test_only_the_driver_daemonsets_are_guarded_by_the_outage_warning(recording: Recording) -> None:
    [guard] = recording.of_type(STASH)
    assert guard.hooks == {"before_update": ("gpu-driver-gpu-outage-warning",)}
    guarded = guard.inputs["input"]["resources"]
    for ds in recording.of_type(DAEMONSET):
        assert ds.hooks == {}, ds.name  # a delete hook would make the engine refuse a plain `pulumi destroy`
        if ds.inputs["metadata"]["name"] == "nvidia-driver-daemonset":
            assert guard.urn in ds.dependencies
            assert guarded[ds.name] == {"namespace": "gpu-operator", "name": "nvidia-driver-daemonset",
                                        "selector": ds.inputs["spec"]["selector"]}
        else:
            assert ds.name not in guarded and guard.urn not in ds.dependencies


def test_register_outputs(recording: Recording) -> None:
    [operator] = recording.of_type(OPERATOR_TOKEN)
    outputs = recording.outputs[operator.urn]
    assert set(outputs) == {"namespace", "gpuResourceNames", "nodeSelectorLabels", "runtimeClassName",
                            "daemonsetNames"}
    assert outputs["namespace"] == "gpu-operator"
    assert "nvidia-driver-daemonset" in outputs["daemonsetNames"]
    for operand in recording.of_type(OPERAND_TOKEN):
        children = [r for r in recording.registrations if r.parent == operand.urn and r.type != STASH]
        assert recording.outputs[operand.urn] == {"state": operand.inputs["state"], "count": len(children)}
    [nfd] = recording.of_type(NFD_TOKEN)
    assert recording.outputs[nfd.urn] == {"version": "0.19.0"}


def test_preview_registers_the_same_objects(recording: Recording) -> None:
    previewed = run_program(_program(), preview=True)
    assert sorted(r.name for r in previewed.registrations) == sorted(r.name for r in recording.registrations)


@pytest.mark.parametrize("args, message", [
    ({}, r"GpuOperator\('gpu'\): args\['provider'\] is required: a pulumi_kubernetes.Provider"),
    ({"provider": "apiVersion: v1"}, r"args\['provider'\] must be a pulumi_kubernetes.Provider .*, not str"),
])
def test_without_a_provider_the_error_names_the_argument(args: dict[str, Any], message: str) -> None:
    recording = Recording()
    with pytest.raises(ComponentArgsError, match=message):
        run_program(lambda: GpuOperator("gpu", args), recording=recording)  # type: ignore[arg-type]
    assert recording.registrations == []


def test_the_vgpu_manager_holds_the_driver_of_sandbox_nodes_and_warns_too() -> None:
    config = load_config(REPO_ROOT / "examples" / "configs" / "sandbox-kubevirt.yaml")
    recording = run_program(_program(config))
    guards = {stash.hooks["before_update"][0]: stash.inputs["input"]["resources"] for stash in recording.of_type(STASH)}
    vgpu = {ds.name for ds in recording.of_type(DAEMONSET)
            if ds.inputs["metadata"]["name"].startswith("nvidia-vgpu-manager-daemonset")}
    assert vgpu and set(guards["gpu-vgpu_manager-gpu-outage-warning"]) == vgpu


WAITING = {"agents": {"image": {"repository": "example.azurecr.io/gpu-operator-agents", "tag": "1.0.0"}},
           "controller": {"waitForDriverRollout": True, "rolloutTimeoutSeconds": 1800}}


def test_waiting_for_the_driver_rollout_is_a_resource_after_every_operand() -> None:
    recording = run_program(_program(WAITING, kubeconfig="kubeconfig: 1"))
    [rollout] = recording.of_type("pulumi-python:dynamic:Resource")
    assert rollout.name == "gpu-driver-rollout"
    assert rollout.inputs["namespace"] == "gpu-operator" and rollout.inputs["timeoutSeconds"] == 1800
    # it waits after every operand object: the driver DaemonSet and the controller's Deployment among them
    objects = {r.urn for r in recording.of_type("kubernetes:") if OPERAND_TOKEN in r.urn}
    assert objects and objects <= set(rollout.dependencies)
    assert any(urn.endswith("nvidia-driver-daemonset") for urn in rollout.dependencies)
    # a new driver version is a new digest (the provider waits again); anything else is not
    newer = run_program(_program({**WAITING, "operator": {"driver": {"version": "595.100.01"}}},
                                 kubeconfig="kubeconfig: 1"))
    other = run_program(_program({**WAITING, "operator": {"gfd": {"version": "v0.18.0"}}}, kubeconfig="kubeconfig: 1"))
    digest = lambda r: r.of_type("pulumi-python:dynamic:Resource")[0].inputs["driverDigest"]  # noqa: E731
    assert digest(newer) != rollout.inputs["driverDigest"] == digest(other)


def test_waiting_for_the_rollout_without_a_kubeconfig_names_the_argument_and_creates_nothing() -> None:
    recording = Recording()
    with pytest.raises(ComponentArgsError, match=r"waitForDriverRollout.*args\['kubeconfig'\]"):
        run_program(_program(WAITING), recording=recording)
    assert not recording.of_type("gpu-operator:index:GpuOperator")
