"""The controller's settings document: read as the render writes it; a bad key is named, with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_operator.agents.controller import command
from gpu_operator.agents.controller.settings import SettingsError, parse_settings
from gpu_operator.remediation import RemediationPolicy
from gpu_operator.upgrade.stages import RolloutPolicy, RolloutStage


def test_defaults_are_nvidias() -> None:
    settings = parse_settings("{}", "gpu-operator")
    assert settings.upgrade.max_parallel_upgrades == 1 and settings.upgrade.max_unavailable == "25%"
    assert settings.upgrade.auto_upgrade and not settings.upgrade.drain
    assert settings.remediation == RemediationPolicy()  # observe mode


@pytest.mark.parametrize(("document", "named"), [
    ({"upgradePolicy": {"maxParallelUpgrades": "five"}}, "upgradePolicy.maxParallelUpgrades"),
    ({"upgradePolicy": {"maxUnavailable": "a lot"}}, "upgradePolicy.maxUnavailable"),
    ({"upgradePolicy": {"autoUpgrade": "yes"}}, "upgradePolicy.autoUpgrade"),
    ({"upgradePolicy": {"drain": {"podSelector": "team in (a"}}}, "upgradePolicy.drain.podSelector"),
    ({"labelling": {"sandboxMode": 1}}, "labelling.sandboxMode"),
    ({"remediation": []}, "remediation"),
    ({"remediation": {"mode": "loud"}}, "remediation.mode"),
    ({"remediation": {"breaker": {"maxNodes": "ten"}}}, "remediation.breaker.maxNodes"),
    ({"remediation": {"rules": {"thermal": {"actions": ["reboot"]}}}}, "remediation.rules.thermal.actions"),
    ({"driverGroups": [{"name": "t4", "daemonSets": "ds"}]}, "driverGroups.0.daemonSets"),
    ({"driverGroups": [{"name": "t4", "nodeSelector": {"team": 1}}]}, "driverGroups.0.nodeSelector"),
    ({"driver": {"ownerLabel": "example.com/owner"}}, "driver.ownerLabel"),
    ({"driverGroups": [{"name": "t4", "daemonSets": ["ds"], "upgradePolicy": {"maxUnavailable": "most"}}]},
     "driverGroups.0.upgradePolicy.maxUnavailable"),
    ({"driverGroups": [{"name": "t4", "upgradePolicy": {"drain": {"podSelector": "a in (b"}}}]},
     "driverGroups.0.upgradePolicy.drain.podSelector"),
    ({"rollout": []}, "rollout"),
    ({"rollout": {"stages": []}}, "rollout.stages"),
    ({"rollout": {"stages": [{"name": "canary", "pools": "canary"}]}}, "rollout.stages.0.pools"),
    ({"rollout": {"stages": [{"name": "canary", "pools": ["a"], "soakSeconds": "1h"}]}},
     "rollout.stages.0.soakSeconds"),
    ({"rollout": {"stages": [{"name": "a", "pools": ["a"]}], "alerts": "Xid"}}, "rollout.alerts"),
])
def test_a_bad_key_is_named(document: dict, named: str) -> None:
    with pytest.raises(SettingsError, match=named.replace(".", r"\.")):
        parse_settings(json.dumps(document), "ns")


def test_the_rendered_driver_groups_are_read_with_their_own_policies() -> None:
    from gpu_operator.config import load_config
    from gpu_operator.render import render

    config = load_config(Path(__file__).resolve().parents[3] / "examples" / "configs" / "per-pool-drivers.yaml")
    [settings_map] = [o for o in render(config) if o["kind"] == "ConfigMap"
                      and o["metadata"]["name"] == "gpu-operator-controller"]
    settings = parse_settings(next(iter(settings_map["data"].values())), "gpu-operator")
    groups = {group.name: group for group in settings.driver_groups}
    assert set(groups) == {"training", "t4"}
    assert groups["t4"].upgrade.max_parallel_upgrades == 2 and groups["training"].upgrade.max_parallel_upgrades == 1
    [app] = groups["t4"].apps
    assert app.startswith("nvidia-gpu-driver-ubuntu22.04-") and settings.group_of(app) == "t4"
    assert settings.driver_apps == {"nvidia-driver-daemonset", app, *groups["training"].apps}
    assert settings.group_of("nvidia-driver-daemonset") == ""
    owners = {owner.name: owner for owner in settings.driver_owners.drivers}
    assert (owners["training"].pools, owners["t4"].pools, settings.driver_owners.cluster_pools) == (
        ("h100",), ("t4",), ("a100",))


def test_bad_settings_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    settings = tmp_path / "controller.json"
    settings.write_text('{"upgradePolicy": {"maxUnavailable": "a lot"}}')
    monkeypatch.setenv("OPERATOR_NAMESPACE", "gpu-operator")
    assert command.main(["--config", str(settings)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "maxUnavailable" in line
    assert command.main(["--config", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the settings file" in capsys.readouterr().err


def test_each_driver_group_has_its_own_pod_steps_and_the_stage_plan_is_read() -> None:
    """Issue 28 item 4: a driver group's `upgradePolicy` carries its own waitForCompletion, podDeletion and drain
    (NVIDIADriver's spec has the whole policy), and `rollout` becomes the gate's policy."""
    document = {
        "upgradePolicy": {"podDeletion": {"timeoutSeconds": 60}},
        "driverGroups": [{"name": "t4", "daemonSets": ["ds-t4"], "upgradePolicy": {
            "waitForCompletion": {"podSelector": "job=batch"},
            "podDeletion": {"force": True, "timeoutSeconds": 30, "deleteEmptyDir": True},
            "drain": {"enable": True, "podSelector": "team=ml", "timeoutSeconds": 90}}}],
        "rollout": {"stages": [{"name": "canary", "pools": ["t4"], "soakSeconds": 600},
                               {"name": "rest", "pools": ["*"]}],
                    "alerts": ["GPUXidCritical"], "prometheusUrl": "http://prometheus:9090"},
    }
    settings = parse_settings(json.dumps(document), "ns")
    t4 = settings.steps_of("t4")
    assert t4.wait_pod_selector.text == "job=batch" and t4.pod_deletion.force and t4.pod_deletion.timeout == 30
    assert t4.pod_deletion.delete_emptydir_data and t4.drain.pod_selector.text == "team=ml" and t4.drain.timeout == 90
    assert settings.steps_of("") == settings.steps and settings.steps.pod_deletion.timeout == 60
    assert not settings.steps.pod_deletion.force and settings.steps_of("unknown") == settings.steps
    assert settings.rollout == RolloutPolicy((RolloutStage("canary", ("t4",), 600), RolloutStage("rest", ("*",))),
                                             ("GPUXidCritical",))
    assert settings.prometheus_url == "http://prometheus:9090"
    assert parse_settings("{}", "ns").rollout is None
