"""state-health-monitor: our GPU health monitor's DaemonSet and RBAC, least privilege, and when it is rendered."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import parse_config
from gpu_operator.render.context import RenderContext
from gpu_operator.render.operands import health_monitor
from tests.render.operands.helpers import (
    assert_valid,
    container,
    env_of,
    find,
    init_names,
    mounts,
    pod_of,
    render_operand,
    volume_paths,
)
from tests.support.agents import AGENTS_IMAGE, with_agents

Object = dict[str, Any]


@pytest.fixture
def node_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The remediation may ask nodes for resets and reboots (what a `remediation` section in enforce mode says)."""
    monkeypatch.setattr(health_monitor, "monitor_settings",
                        lambda ctx: health_monitor.MonitorSettings(node_actions=True))


@pytest.mark.parametrize("document", [
    {},
    {"agents": {"implementation": "nvidia"}},
    with_agents(implementation="nvidia"),
    with_agents(overrides={"healthMonitor": "nvidia"}),
])
def test_only_our_agents_run_it(document: dict[str, Any]) -> None:
    assert render_operand(health_monitor.render, document) == []


def test_objects_rbac_and_their_schemas() -> None:
    objects = render_operand(health_monitor.render, with_agents())
    assert [(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) for o in objects] == [
        ("ServiceAccount", "gpu-health-monitor", "gpu-operator"),
        ("ClusterRole", "gpu-health-monitor", None),
        ("ClusterRoleBinding", "gpu-health-monitor", None),
        ("Role", "gpu-health-monitor-events", "default"),
        ("RoleBinding", "gpu-health-monitor-events", "default"),
        ("DaemonSet", "gpu-health-monitor", "gpu-operator"),
    ]
    assert find(objects, "ClusterRole")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "watch", "patch"]},
        {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
    ]
    assert find(objects, "Role")["rules"] == [
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}]
    assert find(objects, "RoleBinding")["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpu-health-monitor", "namespace": "gpu-operator"}]
    assert_valid(objects)


def test_the_monitor_runs_unprivileged_as_a_non_root_user_with_the_gpus_from_the_runtime() -> None:
    ds = find(render_operand(health_monitor.render, with_agents()), "DaemonSet")
    pod = pod_of(ds)
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.health-monitor": "true"}
    assert init_names(ds) == ["toolkit-validation"]
    wait = container(ds, "toolkit-validation")
    assert wait["securityContext"]["privileged"] is False and wait["securityContext"]["runAsUser"] == 0
    assert [c["name"] for c in pod["containers"]] == ["health-monitor"]
    monitor = container(ds, "health-monitor")
    assert (monitor["image"], monitor["command"]) == (AGENTS_IMAGE, ["gpu-operator-agent", "health-monitor"])
    assert monitor["securityContext"] == {
        "runAsUser": 65532, "runAsGroup": 65532, "runAsNonRoot": True, "privileged": False,
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    env = env_of(monitor)
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and "HOST_ACTIONS_SOCKET" not in env
    assert env["VALIDATIONS_DIR"] == "/run/nvidia/validations"
    assert mounts(monitor) == {"run-nvidia-validations": "/run/nvidia/validations"}
    assert all(m["readOnly"] for m in monitor["volumeMounts"])
    assert volume_paths(ds) == {"run-nvidia-validations": "/run/nvidia/validations"}
    assert pod["runtimeClassName"] == "nvidia" and "hostPID" not in pod


def test_it_tolerates_the_remediations_fault_taint_beside_the_operands_tolerations() -> None:
    default = pod_of(find(render_operand(health_monitor.render, with_agents()), "DaemonSet"))
    assert default["tolerations"] == [
        {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
        {"key": "nvidia.com/gpu-fault", "operator": "Exists"},
    ]
    custom = with_agents({"operator": {"daemonsets": {"tolerations": [{"operator": "Exists"}]}}})
    assert pod_of(find(render_operand(health_monitor.render, custom), "DaemonSet"))["tolerations"] == [
        {"operator": "Exists"}]


@pytest.mark.usefixtures("node_actions")
def test_the_privileged_helper_comes_only_with_node_actions() -> None:
    objects = render_operand(health_monitor.render, with_agents())
    ds = find(objects, "DaemonSet")
    pod = pod_of(ds)
    assert [c["name"] for c in pod["containers"]] == ["health-monitor", "host-actions"]
    helper = container(ds, "host-actions")
    assert helper["command"] == ["gpu-operator-agent", "health-monitor", "--serve-host-actions"]
    assert helper["securityContext"] == {"privileged": True, "runAsUser": 0}
    assert env_of(helper)["HOST_ACTIONS_SOCKET"] == env_of(container(ds, "health-monitor"))["HOST_ACTIONS_SOCKET"]
    assert mounts(helper) == {"host-actions": "/run/gpu-health-monitor", "host-root": "/host",
                              "run-nvidia-validations": "/run/nvidia/validations"}
    assert pod["hostPID"] is True
    assert {"name": "host-actions", "emptyDir": {}} in pod["volumes"]
    assert container(ds, "health-monitor")["securityContext"]["privileged"] is False
    assert "NVIDIA_VISIBLE_DEVICES" not in env_of(helper)
    assert_valid(objects)


def test_with_the_nri_plugin_only_the_monitor_asks_for_the_gpus() -> None:
    document = with_agents({"operator": {"cdi": {"enabled": True, "nriPluginEnabled": True}}})
    ds = find(render_operand(health_monitor.render, document), "DaemonSet")
    assert ds["spec"]["template"]["metadata"]["annotations"] == {
        "nvidia.cdi.k8s.io/container.health-monitor": "management.nvidia.com/gpu=all"}
    assert "runtimeClassName" not in pod_of(ds)


def test_the_defaults_ask_no_node_for_a_reset_or_a_reboot() -> None:
    settings = health_monitor.monitor_settings(RenderContext(parse_config(with_agents())))
    assert settings == health_monitor.MonitorSettings(node_actions=False)


def test_pull_secrets_of_the_agents_image() -> None:
    document = with_agents(image={"pullSecrets": ["registry-key"]})
    pod: Object = pod_of(find(render_operand(health_monitor.render, document), "DaemonSet"))
    assert pod["imagePullSecrets"] == [{"name": "registry-key"}]


def test_the_remediation_section_sets_the_monitor() -> None:
    """Enforce mode with the catalog's ladders asks nodes for GPU resets (reset-required) and, with no cloud,
    reboots: the privileged helper comes; the config's XID overrides reach the monitor's environment."""
    document = with_agents({"remediation": {"mode": "enforce",
                                            "xids": {"ignore": [109], "classify": {"45": "reboot-required"}}}})
    settings = health_monitor.monitor_settings(RenderContext(parse_config(document)))
    assert settings.node_actions and settings.xid_ignore == (109,) and settings.xid_classify == ((45, "reboot-required"),)
    ds = find(render_operand(health_monitor.render, document), "DaemonSet")
    variables = env_of(container(ds, "health-monitor"))
    assert (variables["XID_IGNORE"], variables["XID_CLASSIFY"]) == ("109", "45=reboot-required")
    assert [c["name"] for c in pod_of(ds)["containers"]] == ["health-monitor", "host-actions"]


def test_partial_drains_read_the_kubelets_pod_resources_as_root_and_no_more() -> None:
    """With a rule that drains only the faulty GPU's pods (enforce mode, the catalog's reset ladder, drain.partial)
    the monitor tells which pods hold which GPU from the kubelet's pod-resources socket (root-only): it mounts that
    directory read-only and runs as root, with every capability still dropped; the controller may list NVIDIA's
    ResourceSlices (a DRA claim's device back to its GPU UUID). Observe mode asks for neither."""
    from gpu_operator.render import render

    def parts(document: dict) -> tuple[Object, Object]:
        objects = render(parse_config(document))
        monitor = next(o for o in objects if o["kind"] == "DaemonSet" and o["metadata"]["name"] == "gpu-health-monitor")
        role = next(o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "gpu-operator")
        return monitor, role

    monitor, role = parts(with_agents({"remediation": {"mode": "enforce"}}))
    main = container(monitor, "health-monitor")
    assert env_of(main)["POD_RESOURCES_SOCKET"] == "/var/lib/kubelet/pod-resources/kubelet.sock"
    assert mounts(main)["pod-resources"] == "/var/lib/kubelet/pod-resources"
    assert main["securityContext"]["runAsUser"] == 0 and main["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert main["securityContext"]["privileged"] is False
    assert {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list"]} in role["rules"]
    monitor, role = parts(with_agents())
    assert "POD_RESOURCES_SOCKET" not in env_of(container(monitor, "health-monitor"))
    assert not any("resourceslices" in r["resources"] for r in role["rules"])
    no_partial, _ = parts(with_agents({"remediation": {"mode": "enforce", "drain": {"partial": False}}}))
    assert "POD_RESOURCES_SOCKET" not in env_of(container(no_partial, "health-monitor"))
