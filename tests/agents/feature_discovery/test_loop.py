"""GFD's run semantics with scripted signals: oneshot, relabel, SIGHUP reload, withdrawal on exit, errors."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from unittest import mock

import pytest

from gpu_operator.agents.feature_discovery.command import Loader, make_sink, open_gpus
from gpu_operator.agents.feature_discovery.loop import (
    AgentFailure,
    Dependencies,
    read_machine_type,
    run,
)
from gpu_operator.agents.feature_discovery.settings import Settings
from gpu_operator.agents.nvml import Nvml
from gpu_operator.agents.nvml.adapter import LibraryNvml

TIME_SLICED = "sharing:\n  timeSlicing:\n    resources: [{name: gpu, replicas: 4}]\n"


@dataclass
class ScriptedSignals:
    """Answers each wait with the next scripted item, calling `before` first (to change the world)."""

    script: list[int | None]
    before: list[Callable[[], None]] = field(default_factory=list)
    waits: list[float | None] = field(default_factory=list)

    def wait(self, timeout: float | None) -> int | None:
        self.waits.append(timeout)
        if self.before:
            self.before.pop(0)()
        return self.script.pop(0)


def clock(*times: float) -> Callable[[], float]:
    values: Iterator[float] = iter(times)
    return lambda: next(values)


def deps(
    argv_env: dict[str, str], signals: ScriptedSignals, times: tuple[float, ...] = (1000.0, 2000.0)
) -> Dependencies:
    return Dependencies(
        load_settings=Loader({}, argv_env),
        open_nvml=open_gpus,
        make_sink=make_sink,
        read_machine_type=read_machine_type,
        signals=signals,
        clock=clock(*times),
    )


def file_labels(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "product_name").write_text("Virtual Machine\n")
    return {
        "GPU_OPERATOR_NVML": "fake:t4-1x",
        "GFD_OUTPUT_FILE": str(tmp_path / "features.d" / "gfd"),
        "GFD_MACHINE_TYPE_FILE": str(tmp_path / "product_name"),
        "GFD_USE_NODE_FEATURE_API": "false",
        "GFD_SLEEP_INTERVAL": "60s",
    }


def test_oneshot_labels_once_and_keeps_the_file(env: dict[str, str]) -> None:
    env["GFD_ONESHOT"] = "true"
    signals = ScriptedSignals([])
    assert run(deps(env, signals)) == 0
    labels = file_labels(Path(env["GFD_OUTPUT_FILE"]))
    assert labels["nvidia.com/gpu.product"] == "Tesla-T4"
    assert labels["nvidia.com/gpu.machine"] == "Virtual-Machine"
    assert labels["nvidia.com/gfd.timestamp"] == "1000"
    assert signals.waits == []


def test_relabels_every_interval_and_withdraws_on_sigterm(env: dict[str, str], tmp_path: Path) -> None:
    output = Path(env["GFD_OUTPUT_FILE"])
    seen: list[dict[str, str]] = []
    signals = ScriptedSignals([None, None, signal.SIGTERM], before=[lambda: seen.append(file_labels(output))] * 3)
    assert run(deps(env, signals)) == 0
    assert signals.waits == [60.0, 60.0, 60.0]
    assert [s["nvidia.com/gfd.timestamp"] for s in seen] == ["1000", "1000", "1000"]
    assert not output.exists() and not (output.parent / "gfd-tmp").exists()


def test_sighup_reloads_the_config_and_takes_a_new_timestamp(env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("version: v1\n")
    env["CONFIG_FILE"] = str(config)
    output = Path(env["GFD_OUTPUT_FILE"])
    seen: list[dict[str, str]] = []

    def switch_config() -> None:
        seen.append(file_labels(output))
        config.write_text(TIME_SLICED)

    signals = ScriptedSignals(
        [signal.SIGHUP, signal.SIGQUIT], before=[switch_config, lambda: seen.append(file_labels(output))]
    )
    assert run(deps(env, signals)) == 0
    before, after = seen
    assert (before["nvidia.com/gpu.product"], before["nvidia.com/gpu.replicas"]) == ("Tesla-T4", "1")
    assert (after["nvidia.com/gpu.product"], after["nvidia.com/gpu.replicas"]) == ("Tesla-T4-SHARED", "4")
    assert after["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert (before["nvidia.com/gfd.timestamp"], after["nvidia.com/gfd.timestamp"]) == ("1000", "2000")
    assert not output.exists()


def test_a_switched_config_symlink_reloads_without_a_signal(env: dict[str, str], tmp_path: Path) -> None:
    # NVIDIA's config-manager switches /config/config.yaml to another ConfigMap key by re-pointing a symlink
    plain, shared = tmp_path / "plain", tmp_path / "shared"
    plain.write_text("version: v1\n")
    shared.write_text(TIME_SLICED)
    link = tmp_path / "config.yaml"
    link.symlink_to(plain)
    env["CONFIG_FILE"] = str(link)
    output = Path(env["GFD_OUTPUT_FILE"])
    seen: list[dict[str, str]] = []

    def repoint() -> None:
        seen.append(file_labels(output))
        link.unlink()
        link.symlink_to(shared)

    signals = ScriptedSignals([None, signal.SIGTERM], before=[repoint, lambda: seen.append(file_labels(output))])
    assert run(deps(env, signals)) == 0
    before, after = seen
    assert before["nvidia.com/gpu.replicas"] == "1"
    assert after["nvidia.com/gpu.replicas"] == "4"
    assert (before["nvidia.com/gfd.timestamp"], after["nvidia.com/gfd.timestamp"]) == ("1000", "2000")


def test_an_unchanged_config_does_not_reload(env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(TIME_SLICED)
    env["CONFIG_FILE"] = str(config)
    output = Path(env["GFD_OUTPUT_FILE"])
    seen: list[dict[str, str]] = []
    signals = ScriptedSignals([None, signal.SIGTERM], before=[lambda: seen.append(file_labels(output))] * 2)
    assert run(deps(env, signals, times=(1000.0,))) == 0
    assert [s["nvidia.com/gfd.timestamp"] for s in seen] == ["1000", "1000"]


def test_infinite_sleep_waits_for_a_signal_and_keeps_the_file(env: dict[str, str]) -> None:
    env["GFD_SLEEP_INTERVAL"] = "infinite"
    signals = ScriptedSignals([signal.SIGTERM])
    assert run(deps(env, signals)) == 0
    assert signals.waits == [None]
    assert Path(env["GFD_OUTPUT_FILE"]).exists()


def test_a_labelling_error_fails_and_withdraws(env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("version: v1\n")
    env.update({"CONFIG_FILE": str(config), "GPU_OPERATOR_NVML": "fake:a100-8x-mig"})
    output = Path(env["GFD_OUTPUT_FILE"])

    def switch_to_mps() -> None:
        config.write_text("sharing:\n  mps:\n    resources: [{name: gpu, replicas: 2}]\n")

    signals = ScriptedSignals([signal.SIGHUP], before=[switch_to_mps])
    with pytest.raises(AgentFailure, match="MPS sharing is not supported for mig devices"):
        run(deps(env, signals))
    assert not output.exists()


def test_nvml_unavailable_fails_unless_told_not_to(env: dict[str, str], tmp_path: Path) -> None:
    faulty = tmp_path / "faulty.yaml"
    faulty.write_text("extends: t4-1x\nfaults: {init: DRIVER_NOT_LOADED}\n")
    env.update({"GPU_OPERATOR_NVML": f"fake:{faulty}", "GFD_ONESHOT": "true", "GFD_NO_TIMESTAMP": "true"})
    with pytest.raises(AgentFailure, match="NVML is not available: Driver Not Loaded"):
        run(deps(env, ScriptedSignals([])))
    env["GFD_FAIL_ON_INIT_ERROR"] = "false"
    assert run(deps(env, ScriptedSignals([]))) == 0
    assert file_labels(Path(env["GFD_OUTPUT_FILE"])) == {"nvidia.com/vgpu.present": "false"}


def test_unsupported_discovery_strategies_and_bad_settings_fail(env: dict[str, str]) -> None:
    env["DEVICE_DISCOVERY_STRATEGY"] = "tegra"
    with pytest.raises(AgentFailure, match="device discovery strategy 'tegra' is not supported"):
        run(deps(env, ScriptedSignals([])))
    env["DEVICE_DISCOVERY_STRATEGY"] = "nvml"
    env["GFD_SLEEP_INTERVAL"] = "soon"
    with pytest.raises(AgentFailure, match="invalid value 'soon' for GFD_SLEEP_INTERVAL"):
        run(deps(env, ScriptedSignals([])))


def test_nvml_is_opened_once_and_closed_at_the_end(env: dict[str, str]) -> None:
    opened: list[Nvml] = []

    def counting_open(settings: Settings) -> Nvml:
        opened.append(open_gpus(settings))
        return opened[-1]

    signals = ScriptedSignals([signal.SIGHUP, signal.SIGINT])
    dependencies = replace(deps(env, signals), open_nvml=counting_open)
    with mock.patch.object(LibraryNvml, "close", autospec=True, side_effect=LibraryNvml.close) as close:
        assert run(dependencies) == 0
    assert len(opened) == 1
    close.assert_called_once_with(opened[0])
