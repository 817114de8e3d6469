"""The controller's settings document: read as the render writes it; a bad key is named, with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_operator.agents.controller import command
from gpu_operator.agents.controller.settings import SettingsError, parse_settings
from gpu_operator.remediation import RemediationPolicy


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
])
def test_a_bad_key_is_named(document: dict, named: str) -> None:
    with pytest.raises(SettingsError, match=named.replace(".", r"\.")):
        parse_settings(json.dumps(document), "ns")


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
