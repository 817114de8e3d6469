"""`gpu-operator-agent mig-manager`: settings, the generated config, one pass over the node's label."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvml
import pytest
import yaml

from gpu_operator.agents.cli import main as cli_main
from gpu_operator.agents.mig_manager.command import main
from gpu_operator.agents.mig_manager.reconfigure import STATE_LABEL
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
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


POD = "nvidia-mig-manager-x7k2p"


def _own_pod(server: FakeApiServer) -> dict:
    return server.add({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": POD, "namespace": "gpu-operator", "labels": {"app": "nvidia-mig-manager"}},
                       "spec": {"nodeName": NODE}})


def test_generated_config_applies_the_label(server: FakeApiServer, tmp_path: Path) -> None:
    _own_pod(server)
    env = {"NODE_NAME": NODE, "POD_NAMESPACE": "gpu-operator", "POD_NAME": POD}
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


def test_the_node_config_map_is_labelled_and_owned_by_the_pod(server: FakeApiServer, tmp_path: Path) -> None:
    """NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager/main.go `createNodeConfigMap` (called by `setupMigConfig`
    for a generated config; the GPU operator v26.7.0 grants the pod get and the ConfigMap verbs in
    assets/state-mig-manager/0200_role.yaml): `<node>-mig-config` carries labels
    `app.kubernetes.io/component=nvidia-mig-manager` and `nvidia.com/node-name=<node>` and an owner reference to
    the MIG manager's pod (POD_NAME, its uid); an existing one (a previous pod's) is taken over."""
    server.add({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": f"{NODE}-mig-config", "namespace": "gpu-operator",
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "old-pod", "uid": "u-old"}]},
                "data": {"config.yaml": "stale"}})
    uid = _own_pod(server)["metadata"]["uid"]
    env = {"NODE_NAME": NODE, "POD_NAMESPACE": "gpu-operator", "POD_NAME": POD}
    assert main(_args(tmp_path), env, kube=server.client()) == 0
    published = server.get("configmaps", f"{NODE}-mig-config", "gpu-operator")
    assert published is not None
    assert published["metadata"]["labels"] == {"app.kubernetes.io/component": "nvidia-mig-manager",
                                               "nvidia.com/node-name": NODE}
    assert published["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": POD, "uid": uid}]
    assert published["data"]["config.yaml"] == (tmp_path / "generated.yaml").read_text()


def test_without_pod_name_no_config_map_is_left_ownerless(
    server: FakeApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager/main.go `createNodeConfigMap`: without POD_NAME there is
    no owner, so the ConfigMap is not written (a warning), and the label is still applied."""
    env = {"NODE_NAME": NODE, "POD_NAMESPACE": "gpu-operator"}
    assert main(_args(tmp_path), env, kube=server.client()) == 0
    assert server.get("configmaps", f"{NODE}-mig-config", "gpu-operator") is None
    assert "POD_NAME is not set" in caplog.text
    assert server.get("nodes", NODE)["metadata"]["labels"][STATE_LABEL] == "success"


def _default_file(tmp_path: Path) -> Path:
    path = tmp_path / "config-default.yaml"
    path.write_text("version: v1\nmig-configs:\n"
                    "  all-balanced:\n    - {devices: all, mig-enabled: false}\n"
                    "  only-in-default:\n    - {devices: all, mig-enabled: false}\n")
    return path


def test_the_default_config_is_not_mixed_into_a_generated_one(server: FakeApiServer, tmp_path: Path) -> None:
    """NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager/main.go `setupMigConfig`: when profiles are discovered the
    generated config is the whole config; DEFAULT_CONFIG_FILE is not read."""
    _own_pod(server)
    env = {"NODE_NAME": NODE, "POD_NAMESPACE": "gpu-operator", "POD_NAME": POD,
           "DEFAULT_CONFIG_FILE": str(_default_file(tmp_path))}
    assert main(_args(tmp_path), env, kube=server.client()) == 0
    generated = yaml.safe_load((tmp_path / "generated.yaml").read_text())["mig-configs"]
    assert "only-in-default" not in generated
    assert generated["all-balanced"][0]["mig-enabled"] is True  # the generated all-balanced, not the file's
    published = server.get("configmaps", f"{NODE}-mig-config", "gpu-operator")
    assert "only-in-default" not in published["data"]["config.yaml"]


def _no_profiles(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """An older driver on one A100 with MIG off: the GPU lists no GPU instance profile while MIG is off. Returns
    the arguments that run the MIG manager on it."""
    original = SimulatedLibrary.nvmlDeviceGetGpuInstanceProfileInfo

    def old_driver(self: SimulatedLibrary, handle: Any, profile: int, *args: Any) -> Any:
        if not self.nvmlDeviceGetMigMode(handle)[0]:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return original(self, handle, profile, *args)

    monkeypatch.setattr(SimulatedLibrary, "nvmlDeviceGetGpuInstanceProfileInfo", old_driver)
    node = tmp_path / "a100-mig-off.yaml"
    node.write_text("extends: a100-8x-mig\ndescription: 1x A100 80GB, MIG off\ngpus:\n"
                    "  - {model: A100-SXM4-80GB, uuid: GPU-1179be3c-ec40-4974-80d3-3b8d1e33a4d0, serial: '8077052565615',"
                    " busId: '00000000:07:00.0', minor: 0, numaNode: 0, mig: {current: false, devices: []}}\n")
    return ["--nvml", f"fake:{node}", "--once", "--generated-config-file", str(tmp_path / "generated.yaml")]


def test_the_default_config_when_no_profile_is_discovered(
    server: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager/main.go `setupMigConfig` with pkg/mig/discovery
    discovery.go `discoverProfiles` (ErrNoProfilesDiscovered): MIG-capable GPUs without a discovered profile use
    DEFAULT_CONFIG_FILE (the GPU operator v26.7.0 sets it, controllers/object_controls.go `TransformMigManager`),
    and no node ConfigMap is published for it."""
    args = _no_profiles(monkeypatch, tmp_path)
    _own_pod(server)
    env = {"NODE_NAME": NODE, "POD_NAMESPACE": "gpu-operator", "POD_NAME": POD,
           "DEFAULT_CONFIG_FILE": str(_default_file(tmp_path))}
    assert main(args, env, kube=server.client()) == 0
    assert server.get("nodes", NODE)["metadata"]["labels"][STATE_LABEL] == "success"  # the file's all-balanced
    assert not (tmp_path / "generated.yaml").exists()
    assert server.get("configmaps", f"{NODE}-mig-config", "gpu-operator") is None


def test_no_profile_and_no_default_config_is_a_one_line_error(
    server: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager/main.go `setupMigConfig`: "dynamic generation failed and
    no default config available"; ours names the setting to give."""
    args = _no_profiles(monkeypatch, tmp_path)
    env = {"NODE_NAME": NODE, "POD_NAMESPACE": "gpu-operator"}
    assert main(args, env, kube=server.client()) == 2
    err = capsys.readouterr().err
    assert "list no MIG profile" in err and "DEFAULT_CONFIG_FILE is not set" in err and "Traceback" not in err
