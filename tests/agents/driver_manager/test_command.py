"""`gpu-operator-agent driver-manager`: settings from NVIDIA's flags and variables, and bad input refused with 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents import cli
from gpu_operator.agents.driver_manager.command import main
from gpu_operator.agents.driver_manager.settings import SettingsError, load_settings

BASE = {"NODE_NAME": "gpu-0"}


def test_registered() -> None:
    assert cli.AGENTS["driver-manager"] == "gpu_operator.agents.driver_manager.command"


def test_the_rendered_env_reads_as_nvidia_means_it() -> None:
    rendered = {
        "NODE_NAME": "gpu-0", "NVIDIA_VISIBLE_DEVICES": "void", "ENABLE_GPU_POD_EVICTION": "true",
        "ENABLE_AUTO_DRAIN": "false", "DRAIN_USE_FORCE": "false", "DRAIN_POD_SELECTOR_LABEL": "",
        "DRAIN_TIMEOUT_SECONDS": "0s", "DRAIN_DELETE_EMPTYDIR_DATA": "false", "OPERATOR_NAMESPACE": "gpu-operator",
        "DRIVER_CONFIG_DIGEST": "f" * 64, "GPU_DIRECT_RDMA_ENABLED": "true", "USE_HOST_MOFED": "true",
    }
    command, settings = load_settings(["uninstall_driver"], rendered)
    assert command == "uninstall_driver"
    assert (settings.node_name, settings.enable_gpu_pod_eviction, settings.enable_auto_drain) == ("gpu-0", True, False)
    assert (settings.drain.force, settings.drain.timeout, settings.drain.delete_emptydir_data) == (False, 0.0, False)
    assert settings.drain.pod_selector.matches({"any": "pod"})
    assert (settings.desired_digest, settings.gpu_direct_rdma, settings.use_host_mofed) == ("f" * 64, True, True)
    assert (settings.root, settings.host_driver_delay, settings.poll_interval) == (Path("/"), 60.0, 5.0)


def test_defaults_are_nvidias_and_flags_win_over_the_environment() -> None:
    _, settings = load_settings(["uninstall_driver"], BASE)
    assert settings.enable_auto_drain and settings.enable_gpu_pod_eviction
    assert settings.operator_namespace == "gpu-operator"
    _, settings = load_settings(
        ["uninstall_driver", "--drain-timeout-seconds", "5m", "--enable-auto-drain=false", "--root", "/tmp/x"],
        {**BASE, "DRAIN_TIMEOUT_SECONDS": "1s", "ENABLE_AUTO_DRAIN": "true", "DRAIN_POD_SELECTOR_LABEL": "a in (b,c)"},
    )
    assert (settings.drain.timeout, settings.enable_auto_drain, settings.root) == (300.0, False, Path("/tmp/x"))
    assert settings.drain.pod_selector.matches({"a": "c"}) and not settings.drain.pod_selector.matches({"a": "d"})
    assert load_settings(["uninstall_driver"], {**BASE, "DRAIN_TIMEOUT_SECONDS": "90"})[1].drain.timeout == 90.0


@pytest.mark.parametrize(("argv", "env", "named"), [
    (["uninstall_driver"], {}, "NODE_NAME"),
    (["uninstall_driver"], {**BASE, "DRAIN_TIMEOUT_SECONDS": "ten"}, "DRAIN_TIMEOUT_SECONDS"),
    (["uninstall_driver"], {**BASE, "DRAIN_TIMEOUT_SECONDS": "-5s"}, "DRAIN_TIMEOUT_SECONDS"),
    (["uninstall_driver"], {**BASE, "ENABLE_AUTO_DRAIN": "maybe"}, "ENABLE_AUTO_DRAIN"),
    (["uninstall_driver"], {**BASE, "ENABLE_GPU_POD_EVICTION": "yes"}, "ENABLE_GPU_POD_EVICTION"),
    (["uninstall_driver"], {**BASE, "DRAIN_POD_SELECTOR_LABEL": "tier in (a"}, "DRAIN_POD_SELECTOR_LABEL"),
    (["uninstall_driver"], {**BASE, "DRIVER_MANAGER_POLL_INTERVAL": "0"}, "DRIVER_MANAGER_POLL_INTERVAL"),
    (["uninstall_driver", "--host-driver-delay", "soon"], BASE, "--host-driver-delay"),
    (["preflight_check"], BASE, "unknown command 'preflight_check'"),
    ([], BASE, "no command"),
])
def test_bad_input_names_the_setting_and_exits_2_without_a_traceback(
    argv: list[str], env: dict[str, str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SettingsError, match=named.replace("(", r"\(")):
        load_settings(argv, env)
    assert main(argv, env) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err and err.startswith("gpu-operator-agent driver-manager: ")


def test_help_exits_0_and_an_unknown_flag_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"], BASE) == 0
    assert "DRAIN_TIMEOUT_SECONDS" in capsys.readouterr().out
    assert main(["uninstall_driver", "--no-such-flag"], BASE) == 2


def test_no_kubernetes_credentials_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["uninstall_driver"], {**BASE, "KUBECONFIG": str(tmp_path / "missing")}) == 2
    assert "cannot configure the Kubernetes client" in capsys.readouterr().err
