"""GFD's flags, environment variables and config file, with GFD's precedence: flag, env, file, default."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.feature_discovery.command import build_parser
from gpu_operator.agents.feature_discovery.mig_strategy import MigStrategy
from gpu_operator.agents.feature_discovery.settings import (
    Settings,
    SettingsError,
    resolve_settings,
)
from gpu_operator.agents.plugin_config import SharingStrategy


def resolve(argv: list[str], env: dict[str, str] | None = None) -> Settings:
    return resolve_settings(vars(build_parser().parse_args(argv)), env or {})


def config_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


def test_defaults_are_gfds() -> None:
    settings = resolve([])
    assert settings.mig_strategy is MigStrategy.NONE
    assert settings.fail_on_init_error is True
    assert settings.oneshot is False
    assert settings.no_timestamp is False
    assert settings.sleep_interval == 60.0
    assert settings.output_file == "/etc/kubernetes/node-feature-discovery/features.d/gfd"
    assert settings.machine_type_file == "/sys/class/dmi/id/product_name"
    assert settings.use_node_feature_api is True
    assert settings.device_discovery_strategy == "auto"
    assert settings.driver_root_ctr_path == "/driver-root"
    assert settings.nvml == "auto"
    assert settings.config_file == ""
    assert settings.plugin_config.sharing.strategy is SharingStrategy.NONE


def test_flags() -> None:
    settings = resolve(
        [
            "--mig-strategy",
            "mixed",
            "--fail-on-init-error=false",
            "--oneshot",
            "--no-timestamp",
            "--sleep-interval",
            "1m30s",
            "-o",
            "/tmp/gfd",
            "--machine-type-file",
            "/tmp/product",
            "--use-node-feature-api=false",
            "--nvml",
            "fake:t4-1x",
            "--node-name",
            "node-1",
        ]
    )
    assert settings.mig_strategy is MigStrategy.MIXED
    assert (settings.fail_on_init_error, settings.oneshot, settings.no_timestamp) == (False, True, True)
    assert settings.sleep_interval == 90.0
    assert (settings.output_file, settings.machine_type_file) == ("/tmp/gfd", "/tmp/product")
    assert settings.use_node_feature_api is False
    assert (settings.nvml, settings.node_name) == ("fake:t4-1x", "node-1")


def test_environment_variables_the_operator_sets() -> None:
    env = {
        "GFD_SLEEP_INTERVAL": "60s",
        "GFD_FAIL_ON_INIT_ERROR": "true",
        "MIG_STRATEGY": "single",
        "NAMESPACE": "gpu-operator",
        "NODE_NAME": "aks-gpu-1",
        "POD_NAME": "gpu-feature-discovery-x2x9c",
        "USE_NODE_FEATURE_API": "false",
        "GPU_OPERATOR_NVML": "fake:h100-8x",
        "GFD_OUTPUT_FILE": "",
    }
    settings = resolve([], env)
    assert settings.mig_strategy is MigStrategy.SINGLE
    assert (settings.namespace, settings.node_name, settings.pod_name) == (
        "gpu-operator",
        "aks-gpu-1",
        "gpu-feature-discovery-x2x9c",
    )
    assert settings.use_node_feature_api is False
    assert settings.nvml == "fake:h100-8x"
    assert settings.output_file == ""


def test_gfd_prefixed_variables_win_over_the_shared_ones() -> None:
    env = {
        "GFD_MIG_STRATEGY": "mixed",
        "MIG_STRATEGY": "single",
        "GFD_USE_NODE_FEATURE_API": "1",
        "USE_NODE_FEATURE_API": "0",
    }
    settings = resolve([], env)
    assert settings.mig_strategy is MigStrategy.MIXED
    assert settings.use_node_feature_api is True


def test_flag_beats_environment_beats_config_file_beats_default(tmp_path: Path) -> None:
    path = config_file(
        tmp_path,
        "version: v1\nflags:\n  migStrategy: single\n  failOnInitError: false\n"
        "  gfd: {oneshot: true, sleepInterval: 10s, outputFile: /from/file, noTimestamp: true}\n",
    )
    env = {"CONFIG_FILE": path, "GFD_SLEEP_INTERVAL": "20s", "GFD_OUTPUT_FILE": "/from/env"}
    settings = resolve(["--output-file", "/from/flag"], env)
    assert settings.config_file == path
    assert settings.output_file == "/from/flag"
    assert settings.sleep_interval == 20.0
    assert settings.mig_strategy is MigStrategy.SINGLE
    assert (settings.fail_on_init_error, settings.oneshot, settings.no_timestamp) == (False, True, True)
    assert settings.machine_type_file == "/sys/class/dmi/id/product_name"


def test_config_file_flag_beats_its_variables(tmp_path: Path) -> None:
    chosen = config_file(tmp_path, "flags: {migStrategy: mixed}\n")
    settings = resolve(["--config-file", chosen], {"GFD_CONFIG_FILE": "/missing", "CONFIG_FILE": "/missing"})
    assert settings.mig_strategy is MigStrategy.MIXED


def test_config_file_brings_the_sharing_setup(tmp_path: Path) -> None:
    path = config_file(tmp_path, "sharing:\n  timeSlicing:\n    resources: [{name: gpu, replicas: 4}]\n")
    settings = resolve([], {"GFD_CONFIG_FILE": path})
    assert settings.plugin_config.sharing.strategy is SharingStrategy.TIME_SLICING


def test_infinite_sleep_and_nanoseconds_in_the_file(tmp_path: Path) -> None:
    assert resolve(["--sleep-interval", "infinite"]).sleep_interval is None
    path = config_file(tmp_path, "flags: {gfd: {sleepInterval: 30000000000}}\n")
    assert resolve(["--config-file", path]).sleep_interval == pytest.approx(30.0)


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--mig-strategy", "all"], {}, "invalid value 'all' for --mig-strategy"),
        ([], {"GFD_ONESHOT": "yes"}, "invalid value 'yes' for GFD_ONESHOT"),
        (["--sleep-interval", "60"], {}, "invalid value '60' for --sleep-interval"),
        (["--device-discovery-strategy", "pci"], {}, "invalid --device-discovery-strategy option pci"),
        (["--config-file", "/definitely/missing.yaml"], {}, "unable to load config file /definitely/missing.yaml"),
    ],
)
def test_refused_values(argv: list[str], env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        resolve(argv, env)


def test_refused_file_values(tmp_path: Path) -> None:
    path = config_file(tmp_path, "flags: {gfd: {oneshot: 'sometimes'}}\n")
    with pytest.raises(SettingsError, match="invalid value 'sometimes' for config file flags.gfd.oneshot"):
        resolve(["--config-file", path])
