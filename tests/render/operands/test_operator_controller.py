"""The operator controller's objects: on with the agents image, settings the agent parses, least-privilege RBAC."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_operator.agents.controller.settings import parse_settings
from gpu_operator.config import parse_config
from gpu_operator.labels import LabellingPolicy
from gpu_operator.remediation import Breaker, Mode, RemediationPolicy
from gpu_operator.render import render
from gpu_operator.render.operands.operator_controller import controller_notes

IMAGE = {"agents": {"image": {"repository": "example.azurecr.io/gpu-operator-agents", "tag": "1.0.0"}}}


def _objects(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in render(parse_config(document))}


def test_no_controller_without_the_agents_image_or_when_turned_off() -> None:
    assert ("Deployment", "gpu-operator") not in _objects({})
    assert ("Deployment", "gpu-operator") not in _objects({**IMAGE, "controller": {"enabled": False}})


def test_without_the_controller_a_note_says_remediation_and_upgrades_are_off_and_how_to_turn_them_on() -> None:
    [note] = controller_notes(parse_config({}))
    assert note.startswith("no operator controller runs with NVIDIA's images alone (agents.image and agents.build "
                           "are unset), so GPU fault remediation and node-by-node driver upgrades (cordon, wait for "
                           "jobs, validation) are off")
    assert note.endswith("set agents.image (an image you pushed, `make image`) or agents.build (the stack builds "
                         "and pushes it) to turn them on")
    [off] = controller_notes(parse_config({**IMAGE, "controller": {"enabled": False}}))
    assert off == ("controller.enabled is false, so no operator controller runs: GPU fault remediation and "
                   "node-by-node driver upgrades (cordon, wait for jobs, validation) are off (remediation.mode "
                   "observe does nothing); remove controller.enabled: false to turn them on")
    [no_driver] = controller_notes(parse_config({"operator": {"driver": {"enabled": False}}}))
    assert "GPU fault remediation is off;" in no_driver and "upgrade" not in no_driver
    assert controller_notes(parse_config(IMAGE)) == []


def test_the_settings_the_render_writes_are_what_the_agent_reads() -> None:
    document = {**IMAGE, "operator": {"driver": {"upgradePolicy": {
        "maxParallelUpgrades": 5, "maxUnavailable": "10%",
        "drain": {"enable": True, "podSelector": "team=ml", "force": True, "timeoutSeconds": 90},
        "podDeletion": {"deleteEmptyDir": True, "timeoutSeconds": 60},
        "waitForCompletion": {"podSelector": "app=job", "timeoutSeconds": 60}}}},
        "controller": {"validationTimeoutSeconds": 120, "resyncSeconds": 60}}
    text = _objects(document)[("ConfigMap", "gpu-operator-controller")]["data"]["controller.json"]
    settings = parse_settings(text, "gpu-operator")
    assert settings.upgrade.max_parallel_upgrades == 5 and settings.upgrade.max_unavailable == "10%"
    assert settings.upgrade.drain and settings.steps.drain.pod_selector.text == "team=ml"
    assert settings.steps.drain.force and not settings.steps.drain.delete_emptydir_data and settings.steps.drain.timeout == 90
    assert settings.steps.pod_deletion.delete_emptydir_data and not settings.steps.pod_deletion.force
    assert settings.steps.pod_deletion.timeout == 60
    assert settings.upgrade.wait_for_jobs and settings.steps.wait_pod_selector.text == "app=job"
    assert settings.upgrade.validation_timeout_seconds == 120 and settings.resync_seconds == 60
    # the labelling policy is the ClusterPolicy's sandbox and MIG settings (NVIDIA labels a workload's whole set)
    assert settings.labelling == LabellingPolicy(mig_manager_enabled=True, mig_default_config="all-disabled")


def test_the_remediation_section_is_in_the_settings_and_a_rule_change_restarts_the_controller() -> None:
    rule = {"remediation": {"mode": "enforce", "rules": {"reset-required": {"actions": ["cordon", "reboot"]}},
                            "breaker": {"maxNodes": 3, "maxPercent": None}}}
    objects = _objects({**IMAGE, **rule})
    text = objects[("ConfigMap", "gpu-operator-controller")]["data"]["controller.json"]
    policy = parse_settings(text, "gpu-operator").remediation
    assert policy.mode is Mode.ENFORCE and policy.rule_for("", "reset-required").actions == ("cordon", "reboot")
    assert policy.breaker == Breaker(max_nodes=3)
    default = parse_settings(_objects(IMAGE)[("ConfigMap", "gpu-operator-controller")]["data"]["controller.json"],
                             "gpu-operator")
    assert default.remediation == RemediationPolicy()

    def checksum(found: dict[tuple[str, str], dict[str, Any]]) -> str:
        template = found[("Deployment", "gpu-operator")]["spec"]["template"]
        return template["metadata"]["annotations"]["gpu-operator.pulumi.com/settings-checksum"]

    assert checksum(objects) != checksum(_objects(IMAGE))


def test_sandbox_workloads_turn_the_upgrades_off_as_nvidia_does() -> None:
    text = _objects({**IMAGE, "operator": {"sandboxWorkloads": {"enabled": True}}})[
        ("ConfigMap", "gpu-operator-controller")]["data"]["controller.json"]
    assert json.loads(text)["upgradePolicy"]["autoUpgrade"] is False


def test_a_settings_change_restarts_the_controller() -> None:
    def checksum(document: dict[str, Any]) -> str:
        template = _objects(document)[("Deployment", "gpu-operator")]["spec"]["template"]
        return template["metadata"]["annotations"]["gpu-operator.pulumi.com/settings-checksum"]

    changed = {**IMAGE, "operator": {"driver": {"upgradePolicy": {"maxParallelUpgrades": 3}}}}
    assert checksum(IMAGE) != checksum(changed)


def test_its_pods_are_never_drained_and_run_unprivileged() -> None:
    deployment = _objects(IMAGE)[("Deployment", "gpu-operator")]
    template = deployment["spec"]["template"]
    assert template["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-drain.skip"] == "true"
    [container] = template["spec"]["containers"]
    assert container["command"] == ["gpu-operator-agent", "operator"]
    assert container["securityContext"]["runAsNonRoot"] and container["securityContext"]["readOnlyRootFilesystem"]
    assert deployment["spec"]["replicas"] == 2


@pytest.mark.parametrize(("kind", "name", "rules"), [
    ("ClusterRole", "gpu-operator", [([""], ["nodes"], ["list", "watch", "patch"]),
                                     ([""], ["pods"], ["list"]), ([""], ["pods/eviction"], ["create"]),
                                     # NVIDIA DRA claims make a pod a GPU pod (`PodHasNVIDIAGPUClaim`)
                                     (["resource.k8s.io"], ["resourceclaims"], ["get"])]),
    ("Role", "gpu-operator-events", [([""], ["events"], ["create"])]),
])
def test_rbac_is_what_the_controller_calls(kind: str, name: str, rules: list[tuple[list[str], ...]]) -> None:
    granted = _objects(IMAGE)[(kind, name)]["rules"]
    assert [(r["apiGroups"], r["resources"], r["verbs"]) for r in granted] == rules


def test_asking_for_the_controller_without_an_image_names_both_fixes() -> None:
    from gpu_operator.config import ConfigError

    with pytest.raises(ConfigError, match="agents.image .* or agents.build"):
        parse_config({"controller": {"enabled": True}})


def test_the_names_the_render_grants_are_the_names_the_controller_uses() -> None:
    """RBAC by resourceName and by namespace only works while both sides spell the objects the same."""
    from gpu_operator.agents.controller import leader, loop, status
    from gpu_operator.render.operands import operator_controller as rendered

    assert rendered.STATUS_CONFIG_MAP == status.STATUS_CONFIG_MAP
    assert rendered.EVENT_NAMESPACE == loop.EVENT_NAMESPACE
    role = _objects(IMAGE)[("Role", "gpu-operator")]
    assert {"resourceNames": [leader.LEASE_NAME]}.items() <= next(
        r for r in role["rules"] if r["resources"] == ["leases"] and "update" in r["verbs"]).items()


def test_operands_tolerate_the_taint_a_remediation_rule_may_add() -> None:
    """Issue 26: a `taint` rung keeps new pods off a faulty node; the GPU operands must come back to it after a
    GPU reset (their pods were paused) and the validator must run there, or the node is never handed back. No rule
    taints by default (the catalog's ladders cordon), so nothing changes then."""
    from gpu_operator.config import parse_config
    from gpu_operator.render import render

    def operand_tolerations(document: dict) -> dict[str, list]:
        return {o["metadata"]["name"]: o["spec"]["template"]["spec"].get("tolerations", [])
                for o in render(parse_config(document)) if o["kind"] == "DaemonSet"}

    default = operand_tolerations({})
    assert not any(t.get("key") == "nvidia.com/gpu-fault" for ts in default.values() for t in ts)
    tainting = operand_tolerations({"remediation": {"mode": "enforce", "pools": {}, "rules": {
        "fallen-off-bus": {"actions": ["taint", "drain", "reboot", "needs-human"],
                           "taint": {"key": "example.com/gpu-broken", "effect": "NoExecute"}}}}})
    wanted = {"key": "example.com/gpu-broken", "operator": "Exists", "effect": "NoExecute"}
    assert tainting and all(wanted in tolerations for tolerations in tainting.values())
    assert set(tainting) == set(default)  # the same operands, each tolerating the taint
