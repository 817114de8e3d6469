"""`gpu-operator-agent <name>` dispatches to the agent's module."""

from __future__ import annotations

import pytest

from gpu_operator.agents import cli


def test_known_agents() -> None:
    assert cli.AGENTS == {
        "config-manager": "gpu_operator.agents.device_plugin.config_manager",
        "device-plugin": "gpu_operator.agents.device_plugin.command",
        "driver-manager": "gpu_operator.agents.driver_manager.command",
        "feature-discovery": "gpu_operator.agents.feature_discovery.command",
        "health-monitor": "gpu_operator.agents.health_monitor.command",
        "metrics-exporter": "gpu_operator.agents.metrics_exporter.command",
        "mig-manager": "gpu_operator.agents.mig_manager.command",
        "node-status-exporter": "gpu_operator.agents.node_status_exporter.command",
        "operator": "gpu_operator.agents.controller.command",
        "validator": "gpu_operator.agents.validator.command",
    }


def test_every_agent_module_has_a_main() -> None:
    import importlib

    for module in cli.AGENTS.values():
        assert callable(importlib.import_module(module).main), module


def test_dispatch_passes_the_remaining_flags(capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(
        [
            "feature-discovery",
            "--nvml",
            "fake:t4-1x",
            "--oneshot",
            "--output-file",
            "",
            "--no-timestamp",
            "--use-node-feature-api=false",
            "--machine-type-file",
            "",
        ]
    )
    assert status == 0
    assert "nvidia.com/gpu.product=Tesla-T4\n" in capsys.readouterr().out


def test_unknown_agent(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["no-such-agent"]) == 2
    assert "unknown agent 'no-such-agent'" in capsys.readouterr().err


def test_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert cli.main(["--help"]) == 0
    assert "agents: config-manager, device-plugin, driver-manager, feature-discovery" in capsys.readouterr().err
