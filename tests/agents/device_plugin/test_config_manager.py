"""`gpu-operator-agent config-manager`: the config a node label selects, the link it maintains, the process it
signals, against the fake API server and a real child process that counts its SIGHUPs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_operator.agents.cli import main as cli_main
from gpu_operator.agents.device_plugin.config_manager import (
    ConfigManager,
    ConfigManagerError,
    Settings,
    choose_config,
    find_process,
    link_config,
    main,
    settings_from,
)
from gpu_operator.agents.kube.resources import NODES
from tests.agents.kube.fake_apiserver import FakeApiServer

NODE = "gpu-node-0"
LABEL = "nvidia.com/device-plugin.config"


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    source = tmp_path / "available-configs"
    (source / "..2026_data").mkdir(parents=True)  # what a mounted ConfigMap also holds
    for name in ("a100-ts", "h100-mps"):
        (source / name).write_text(f"version: v1\n# {name}\n")
    return source


def _settings(configs: Path, **extra: object) -> Settings:
    return Settings(NODE, str(configs), str(configs.parent / "config.yaml"), **extra)  # type: ignore[arg-type]


def test_the_label_then_the_default_then_the_fallbacks_choose(configs: Path) -> None:
    settings = _settings(configs)
    assert choose_config("h100-mps", settings) == "h100-mps"
    assert choose_config("", _settings(configs, default_config="a100-ts")) == "a100-ts"
    assert choose_config("", _settings(configs, fallbacks=("named", "empty"))) == ""
    (configs / "default").write_text("version: v1\n")
    assert choose_config("", _settings(configs, fallbacks=("named", "empty"))) == "default"
    with pytest.raises(ConfigManagerError, match="nvidia.com/device-plugin.config=nope: no config named 'nope' "
                                                 r"\(available: a100-ts, default, h100-mps\)"):
        choose_config("nope", settings)
    with pytest.raises(ConfigManagerError, match="no fallback strategy \\(single\\) found a config"):
        choose_config("", _settings(configs, fallbacks=("single",)))


def test_the_destination_links_to_the_chosen_config_or_to_dev_null(configs: Path) -> None:
    settings = _settings(configs)
    destination = Path(settings.destination)
    assert link_config("a100-ts", settings)
    assert destination.read_text() == "version: v1\n# a100-ts\n"
    assert not link_config("a100-ts", settings)  # already there: nothing to do
    assert link_config("", settings)
    assert os.readlink(destination) == "/dev/null" and destination.read_text() == ""


def _counting_process(tmp_path: Path) -> subprocess.Popen[bytes]:
    """A process whose command line reads like the agent's, counting SIGHUPs into a file."""
    script = tmp_path / "gpu-operator-agent"
    script.write_text(
        "import signal, sys, time\n"
        "count = 0\n"
        "def hup(*_):\n"
        "    global count\n"
        "    count += 1\n"
        f"    open({str(tmp_path / 'hups')!r}, 'w').write(str(count))\n"
        "signal.signal(signal.SIGHUP, hup)\n"
        f"open({str(tmp_path / 'ready')!r}, 'w').close()\n"
        "while True:\n"
        "    time.sleep(0.05)\n"
    )
    process = subprocess.Popen([sys.executable, str(script), "device-plugin", "--mig-strategy", "single"])
    deadline = time.monotonic() + 10
    while not (tmp_path / "ready").exists():
        assert time.monotonic() < deadline, "the counting process did not start"
        time.sleep(0.02)
    return process


def _hups(tmp_path: Path, expected: int) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text = (tmp_path / "hups").read_text() if (tmp_path / "hups").exists() else "0"
        if text and int(text) >= expected:
            return int(text)
        time.sleep(0.02)
    return int((tmp_path / "hups").read_text() or 0) if (tmp_path / "hups").exists() else 0


@pytest.fixture
def counting(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    process = _counting_process(tmp_path)
    try:
        yield process
    finally:
        process.kill()
        process.wait(timeout=10)


def test_the_python_agent_is_found_by_its_command_line(counting: subprocess.Popen[bytes]) -> None:
    assert find_process("gpu-operator-agent device-plugin") == counting.pid
    with pytest.raises(ConfigManagerError, match="no process 'gpu-operator-agent feature-discovery'"):
        find_process("gpu-operator-agent feature-discovery")


def test_a_label_change_switches_the_file_and_signals_the_agent_once(
    configs: Path, tmp_path: Path, counting: subprocess.Popen[bytes]
) -> None:
    labels = iter(["a100-ts", "a100-ts", "nope", "h100-mps"])
    settings = _settings(configs, process="gpu-operator-agent device-plugin", poll_interval=0)
    seen: list[str] = []

    def read() -> str:
        seen.append(next(labels))
        return seen[-1]

    ConfigManager(settings, read).run(stop=lambda: len(seen) == 4)
    assert Path(settings.destination).read_text() == "version: v1\n# h100-mps\n"
    assert _hups(tmp_path, 2) == 2  # a100-ts once (not again, not for the bad label), then h100-mps


def test_oneshot_reads_the_node_and_exits_1_on_a_missing_config(
    configs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeApiServer() as server:
        server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {LABEL: "h100-mps"}}})
        env = {"NODE_NAME": NODE, "CONFIG_FILE_SRCDIR": str(configs), "CONFIG_FILE_DST": str(configs.parent / "c"),
               "ONESHOT": "true", "SEND_SIGNAL": "false", "SIGNAL": "", "FALLBACK_STRATEGIES": "empty"}
        assert main([], env, kube=server.client()) == 0
        assert (configs.parent / "c").read_text() == "version: v1\n# h100-mps\n"
        server.client().patch(NODES, NODE, {"metadata": {"labels": {LABEL: "gone"}}})
        assert main([], env, kube=server.client()) == 1
    assert "no config named 'gone'" in capsys.readouterr().err


@pytest.mark.parametrize(("env", "message"), [
    ({}, "NODE_NAME, CONFIG_FILE_SRCDIR, CONFIG_FILE_DST must be set"),
    ({"NODE_NAME": NODE, "CONFIG_FILE_SRCDIR": "/a", "CONFIG_FILE_DST": "/b", "FALLBACK_STRATEGIES": "named,first"},
     "FALLBACK_STRATEGIES: unknown strategy first"),
    ({"NODE_NAME": NODE, "CONFIG_FILE_SRCDIR": "/a", "CONFIG_FILE_DST": "/b", "SIGNAL": "HUP"},
     "SIGNAL='HUP': expected a signal number"),
    ({"NODE_NAME": NODE, "CONFIG_FILE_SRCDIR": "/a", "CONFIG_FILE_DST": "/b", "ONESHOT": "maybe"},
     "ONESHOT='maybe': expected true or false"),
])
def test_bad_settings_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigManagerError) as refused:
        settings_from(env)
    assert message in str(refused.value)


def test_defaults_are_nvidias() -> None:
    settings = settings_from({"NODE_NAME": NODE, "CONFIG_FILE_SRCDIR": "/a", "CONFIG_FILE_DST": "/b"})
    assert (settings.label, settings.signal, settings.send_signal, settings.process) == (
        LABEL, int(signal.SIGHUP), True, "nvidia-device-plugin")


def test_registered_in_the_agent_cli(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["config-manager", "--help"])
    assert exit_info.value.code == 0
    assert "node label" in capsys.readouterr().out
