"""`gpu-operator-agent mig-manager`: settings, the generated config, one pass over the node's label."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gpu_operator.agents.cli import main as cli_main
from gpu_operator.agents.mig_manager.command import main
from gpu_operator.agents.mig_manager.reconfigure import STATE_LABEL
from tests.agents.kube.fake_apiserver import FakeApiServer

NODE = "gpu-node-0"


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        labels = {"nvidia.com/mig.config": "all-balanced", "nvidia.com/gpu.deploy.device-plugin": "true"}
        running.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": labels}})
        yield running


def _args(tmp_path: Path, *extra: str) -> list[str]:
    return ["--nvml", "fake:a100-8x-mig", "--once", "--generated-config-file", str(tmp_path / "generated.yaml"), *extra]


def test_generated_config_applies_the_label(server: FakeApiServer, tmp_path: Path) -> None:
    env = {"NODE_NAME": NODE, "POD_NAMESPACE": "gpu-operator"}
    assert main(_args(tmp_path), env, kube=server.client()) == 0
    generated = yaml.safe_load((tmp_path / "generated.yaml").read_text())
    names = set(generated["mig-configs"])
    assert {"all-disabled", "all-enabled", "all-1g.10gb", "all-7g.80gb", "all-balanced"} <= names
    assert not any("18gb" in name for name in names)  # only the node's GPU models
    labels = server.get("nodes", NODE)["metadata"]["labels"]
    assert labels[STATE_LABEL] == "success"
    published = server.get("configmaps", f"{NODE}-mig-config", "gpu-operator")
    assert published is not None and yaml.safe_load(published["data"]["config.yaml"]) == generated
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "true"


def test_config_file_from_env(server: FakeApiServer, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("version: v1\nmig-configs:\n  all-balanced:\n    - {devices: all, mig-enabled: false}\n")
    env = {"NODE_NAME": NODE, "POD_NAMESPACE": "gpu-operator", "CONFIG_FILE": str(config)}
    assert main(_args(tmp_path), env, kube=server.client()) == 0
    assert server.get("nodes", NODE)["metadata"]["labels"][STATE_LABEL] == "success"
    assert not (tmp_path / "generated.yaml").exists()
    assert server.get("configmaps", f"{NODE}-mig-config", "gpu-operator") is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"POD_NAMESPACE": "gpu-operator"}, "set NODE_NAME"),
        ({"NODE_NAME": NODE}, "set POD_NAMESPACE"),
        ({"NODE_NAME": NODE, "POD_NAMESPACE": "x", "WITH_SHUTDOWN_HOST_GPU_CLIENTS": "true",
          "GPU_CLIENTS_FILE": "/nonexistent/clients.yaml"},
         "cannot read the GPU clients file /nonexistent/clients.yaml"),
        ({"NODE_NAME": NODE, "POD_NAMESPACE": "x", "WITH_SHUTDOWN_HOST_GPU_CLIENTS": "perhaps"},
         "WITH_SHUTDOWN_HOST_GPU_CLIENTS='perhaps': expected true or false"),
        ({"NODE_NAME": NODE, "POD_NAMESPACE": "x"}, "cannot reach the Kubernetes API: not running in a cluster"),
        ({"NODE_NAME": NODE, "POD_NAMESPACE": "x", "WITH_REBOOT": "maybe"}, "WITH_REBOOT='maybe': expected true"),
        ({"NODE_NAME": NODE, "POD_NAMESPACE": "x", "CONFIG_FILE": "/nonexistent/c.yaml"}, "cannot read MIG config"),
        ({"NODE_NAME": NODE, "POD_NAMESPACE": "x", "CDI_ENABLED": "sometimes"}, "CDI_ENABLED='sometimes'"),
    ],
)
def test_bad_settings_are_one_line_errors(
    env: dict[str, str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_args(tmp_path), env) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_registered_in_the_agent_cli(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["mig-manager", "--help"])
    assert exit_info.value.code == 0
    assert "nvidia.com/mig.config" in capsys.readouterr().out


@pytest.mark.parametrize(("given", "host_driver", "stops"), [
    ({}, "true", True), ({}, "false", False), ({"WITH_SHUTDOWN_HOST_GPU_CLIENTS": "false"}, "true", False),
    ({"WITH_SHUTDOWN_HOST_GPU_CLIENTS": "true"}, "false", True)])
def test_host_clients_stop_with_a_host_driver_unless_told_otherwise(
    server: FakeApiServer, tmp_path: Path, given: dict[str, str], host_driver: str, stops: bool
) -> None:
    (tmp_path / "driver-ready").write_text(f"IS_HOST_DRIVER={host_driver}\nNVIDIA_DRIVER_ROOT=/\n")
    clients = tmp_path / "clients.yaml"
    clients.write_text("version: v1\nsystemd-services: [nvidia-dcgm.service]\n")
    commands: list[list[str]] = []

    def systemctl(command: list[str]) -> tuple[int, str]:
        commands.append(list(command))
        return (0, "") if "is-active" in command or command[3] in ("stop", "start") else (3, "")

    env = {"NODE_NAME": NODE, "POD_NAMESPACE": "gpu-operator", "GPU_CLIENTS_FILE": str(clients), **given}
    assert main(_args(tmp_path, "--validations-dir", str(tmp_path)), env, kube=server.client(),
                host_runner=systemctl) == 0
    assert server.get("nodes", NODE)["metadata"]["labels"][STATE_LABEL] == "success"
    stops_and_starts = [c[3:] for c in commands if c[3] in ("stop", "start")]
    assert stops_and_starts == ([["stop", "nvidia-dcgm.service"], ["start", "nvidia-dcgm.service"]] if stops else [])
