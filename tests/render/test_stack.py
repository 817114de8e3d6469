"""Whole-stack properties of the rendered operands, for the default config and every example config."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from gpu_operator.config import GpuStackConfig, load_config, parse_config
from gpu_operator.render import OPERANDS, render, render_operands
from tests.golden.cases import CASES
from tests.support.schemas import validate_objects

#: NVIDIA's fixed state order (reference/gpu-operator.md §5.1), without the states we do not render, and with the
#: chart's NFD objects after the pre-requisites.
STATE_ORDER = [
    "pre-requisites", "state-operator", "node-feature-discovery", "state-driver", "state-container-toolkit", "state-operator-validation", "state-device-plugin",
    "state-mps-control-daemon", "state-dcgm", "state-dcgm-exporter", "gpu-feature-discovery", "state-mig-manager",
    "state-node-status-exporter", "state-health-monitor", "state-vgpu-manager", "state-vgpu-device-manager", "state-sandbox-validation",
    "state-vfio-manager", "state-sandbox-device-plugin", "state-kata-device-plugin", "state-cc-manager",
]


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> tuple[str, GpuStackConfig, list[dict[str, Any]]]:
    config = load_config(CASES[request.param])
    return request.param, config, render(config)


def test_every_object_passes_strict_schemas(case: tuple[str, GpuStackConfig, list[dict[str, Any]]]) -> None:
    name, _, objects = case
    problems = validate_objects(objects)
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_no_two_objects_share_kind_namespace_and_name(case: tuple[str, GpuStackConfig, list[dict[str, Any]]]) -> None:
    _, _, objects = case
    keys = Counter((o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects)
    assert [k for k, n in keys.items() if n > 1] == []


def test_namespaced_objects_live_in_the_configured_namespace(
    case: tuple[str, GpuStackConfig, list[dict[str, Any]]]
) -> None:
    _, config, objects = case
    # the one exception: a Node's Events live in `default`, so the controller's and the health monitor's right to
    # write them lives there
    elsewhere = {(o["kind"], o["metadata"]["name"], o["metadata"]["namespace"]) for o in objects
                 if o["metadata"].get("namespace", config.namespace) != config.namespace}
    assert elsewhere <= {(kind, name, "default") for kind in ("Role", "RoleBinding")
                         for name in ("gpu-operator-events", "gpu-health-monitor-events")}
    namespaces = {o["metadata"]["namespace"] for o in objects if "namespace" in o["metadata"]} - {"default"}
    assert namespaces == {config.namespace}
    assert (objects[0]["kind"], objects[0]["metadata"]["name"]) == ("Namespace", config.namespace)


def test_every_daemonset_selects_gpu_nodes_and_tolerates_them(
    case: tuple[str, GpuStackConfig, list[dict[str, Any]]]
) -> None:
    _, config, objects = case
    tolerations = [t.model_dump(by_alias=True, exclude_none=True) for t in config.operator.daemonsets.tolerations]
    for ds in (o for o in objects if o["kind"] == "DaemonSet"):
        pod = ds["spec"]["template"]["spec"]
        deploy = [k for k in pod["nodeSelector"] if k.startswith("nvidia.com/gpu.deploy.")]
        assert len(deploy) == 1, ds["metadata"]["name"]
        assert pod["nodeSelector"][deploy[0]] == "true"
        # the health monitor also tolerates the remediation's fault taint (its node may be tainted for a fault)
        extra = [{"key": "nvidia.com/gpu-fault", "operator": "Exists"}] \
            if ds["metadata"]["name"] == "gpu-health-monitor" and {"operator": "Exists"} not in tolerations else []
        assert pod["tolerations"] == tolerations + extra
        assert pod["priorityClassName"] == config.operator.daemonsets.priority_class_name
        template_labels = ds["spec"]["template"]["metadata"]["labels"]
        assert ds["spec"]["selector"]["matchLabels"].items() <= template_labels.items()


def test_service_accounts_exist_for_every_daemonset(case: tuple[str, GpuStackConfig, list[dict[str, Any]]]) -> None:
    _, _, objects = case
    accounts = {o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"}
    for ds in (o for o in objects if o["kind"] == "DaemonSet"):
        assert ds["spec"]["template"]["spec"]["serviceAccountName"] in accounts, ds["metadata"]["name"]


def test_role_bindings_point_at_rendered_roles_and_accounts(
    case: tuple[str, GpuStackConfig, list[dict[str, Any]]]
) -> None:
    _, _, objects = case
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    for binding in (o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        assert (binding["roleRef"]["kind"], binding["roleRef"]["name"]) in names, binding["metadata"]["name"]
        for subject in binding["subjects"]:
            assert ("ServiceAccount", subject["name"]) in names, binding["metadata"]["name"]


def test_config_maps_mounted_by_daemonsets_are_rendered_or_user_provided(
    case: tuple[str, GpuStackConfig, list[dict[str, Any]]]
) -> None:
    _, config, objects = case
    rendered = {o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap"}
    user_named = {
        config.operator.device_plugin.config.name, config.operator.mig_manager.config.name,
        config.operator.mig_manager.gpu_clients_config.name, config.operator.dcgm_exporter.config.name,
        config.operator.vgpu_device_manager.config.name, config.operator.driver.repo_config.config_map_name,
        config.operator.driver.cert_config.name, config.operator.driver.kernel_module_config.name,
        config.operator.driver.licensing_config.config_map_name, config.operator.vgpu_manager.kernel_module_config.name,
    } - {""}
    for ds in (o for o in objects if o["kind"] == "DaemonSet"):
        for volume in ds["spec"]["template"]["spec"].get("volumes", []):
            if "configMap" in volume:
                assert volume["configMap"]["name"] in rendered | user_named, (ds["metadata"]["name"], volume)


def test_operands_come_in_nvidia_state_order(case: tuple[str, GpuStackConfig, list[dict[str, Any]]]) -> None:
    _, config, _ = case
    states = [operand.state for operand in render_operands(config)]
    assert states == sorted(states, key=STATE_ORDER.index)


def test_registry_lists_every_state_once_in_order() -> None:
    assert [operand.state for operand in OPERANDS] == [s for s in STATE_ORDER if s != "state-operator"]


def test_rendering_is_deterministic() -> None:
    config = load_config(CASES["default"])
    assert render(config) == render(config)


def test_disabled_operands_render_nothing() -> None:
    everything_off = {
        "driver": {"enabled": False}, "toolkit": {"enabled": False}, "devicePlugin": {"enabled": False},
        "dcgmExporter": {"enabled": False}, "gfd": {"enabled": False}, "migManager": {"enabled": False},
    }
    operands = render_operands(parse_config({"operator": everything_off}))
    assert [o.state for o in operands] == ["pre-requisites", "state-operator-validation"]
    validator = [o for o in operands[1].objects if o["kind"] == "DaemonSet"][0]
    inits = [c["name"] for c in validator["spec"]["template"]["spec"]["initContainers"]]
    assert "plugin-validation" not in inits


def test_default_stack_passes_kubernetes_validate_strict_itself() -> None:
    """The same check through kubernetes-validate's own entry point (our cached validators mirror it)."""
    import kubernetes_validate

    from tests.support.schemas import KUBERNETES_VERSIONS, is_builtin

    for obj in render(load_config(CASES["default"])):
        if not is_builtin(obj):
            continue
        for version in KUBERNETES_VERSIONS:
            assert kubernetes_validate.validate(obj, version, strict=True) == version
