"""`gpu-operator-agent metrics-exporter` in-process: settings, serving, health over HTTP, reload, dispatch."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpu_operator.agents import cli
from gpu_operator.agents.exposition import CONTENT_TYPE, ListenAddress
from gpu_operator.agents.metrics_exporter.command import (
    Exporter,
    serve_until_stopped,
    start,
)
from gpu_operator.agents.metrics_exporter.counters import DEFAULT_COLLECTORS
from gpu_operator.agents.metrics_exporter.settings import (
    Settings,
    SettingsError,
    resolve_settings,
)
from gpu_operator.agents.signals import RELOAD
from tests.agents.metrics_exporter.support import parse


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def fetch(exporter: Exporter, path: str) -> tuple[int, str, bytes]:
    url = f"http://127.0.0.1:{exporter.server.port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


@pytest.fixture
def running(request: pytest.FixtureRequest) -> Iterator[Exporter]:
    options = {"address": "127.0.0.1:0", "collect_interval_ms": "100", "node_name": "gpu-node-1", **request.param}
    exporter = start(resolve_settings(options, {}), {})
    wait_for(lambda: exporter.holder.current().collected_at is not None, "the first collection")
    yield exporter
    exporter.stop()


def test_defaults_and_env_are_dcgm_exporters() -> None:
    assert resolve_settings({}, {}) == Settings()
    settings = resolve_settings(
        {"collect_interval_ms": "5000"},
        {
            "DCGM_EXPORTER_LISTEN": ":9500",
            "DCGM_EXPORTER_INTERVAL": "10000",
            "DCGM_EXPORTER_KUBERNETES": "true",
            "DCGM_EXPORTER_COLLECTORS": "/etc/dcgm-exporter/dcp-metrics-included.csv",
            "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "device-name",
            "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID": "1",
            "DCGM_POD_RESOURCES_KUBELET_SOCKET": "/var/lib/kubelet/pod-resources/kubelet.sock",
            "NVIDIA_RESOURCE_NAMES": "nvidia.com/a100, nvidia.com/h100",
            "DCGM_EXPORTER_CONFIGMAP_DATA": "gpu-operator:metrics",
            "DCGM_REMOTE_HOSTENGINE_INFO": "nvidia-dcgm:5555",
            "NODE_NAME": "worker-7",
            "GPU_OPERATOR_NVML": "fake:h100-8x",
        },
    )
    assert settings.address == ListenAddress("", 9500)
    assert settings.collect_interval_ms == 5000  # the flag wins over DCGM_EXPORTER_INTERVAL
    assert settings.kubernetes and settings.pod_uid and settings.gpu_id_type == "device-name"
    assert settings.resource_names == ("nvidia.com/a100", "nvidia.com/h100")
    assert (settings.node_name, settings.nvml) == ("worker-7", "fake:h100-8x")
    assert Settings().collectors == DEFAULT_COLLECTORS == "/etc/dcgm-exporter/default-counters.csv"
    assert Settings().collect_interval_ms == 30000 and Settings().fail_on_init_error


@pytest.mark.parametrize(
    ("cli_values", "env", "message"),
    [
        ({"collect_interval_ms": "0"}, {}, "--collect-interval"),
        ({}, {"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "index"}, "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"),
        ({}, {"DCGM_EXPORTER_KUBERNETES": "yes"}, "DCGM_EXPORTER_KUBERNETES"),
        ({"pod_resources_socket": "kubelet.sock"}, {}, "must be an absolute path"),
        ({"web_config_file": "/etc/web.yml"}, {}, "not supported"),
        ({"address": "9400"}, {}, "invalid listen address"),
    ],
)
def test_bad_settings(cli_values: dict[str, str], env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        resolve_settings(cli_values, env)


@pytest.mark.parametrize("running", [{"nvml": "fake:h100-8x"}], indirect=True)
def test_serves_metrics_and_health(running: Exporter) -> None:
    status, kind, body = fetch(running, "/metrics")
    assert (status, kind) == (200, CONTENT_TYPE)
    families = {f.name: f for f in parse(body)}
    assert len(families["DCGM_FI_DEV_GPU_TEMP"].samples) == 8
    assert {s.labels["hostname"] for s in families["DCGM_FI_DEV_GPU_TEMP"].samples} == {"gpu-node-1"}
    assert fetch(running, "/health")[:1] == (200,)
    assert b"./metrics" in fetch(running, "/")[2]
    wait_for(lambda: "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in {f.name for f in parse(fetch(running, "/metrics")[2])},
             "profiling metrics after the second collection")
    assert running.xid_watch is not None


@pytest.fixture
def lost_profile(tmp_path: Path) -> str:
    path = tmp_path / "lost.yaml"
    path.write_text("extends: h100-8x\nfaults:\n  lostGpus: [6]\n")
    return f"fake:{path}"


def test_health_reports_a_lost_gpu_over_http(lost_profile: str) -> None:
    exporter = start(resolve_settings({"nvml": lost_profile, "address": "127.0.0.1:0"}, {}), {})
    try:
        wait_for(lambda: exporter.holder.current().collected_at is not None, "the first collection")
        status, _, body = fetch(exporter, "/health")
        # degraded, not failing: a restart cannot bring the GPU back but would stop the other GPUs' metrics
        assert status == 200
        assert body == b"degraded\nGPU 6 (unknown UUID) is lost: its metrics are no longer reported\n"
        samples = next(f for f in parse(fetch(exporter, "/metrics")[2]) if f.name == "DCGM_FI_DEV_GPU_TEMP").samples
        assert sorted(s.labels["gpu"] for s in samples) == ["0", "1", "2", "3", "4", "5", "7"]
    finally:
        exporter.stop()


class Signals:
    def __init__(self, *received: int) -> None:
        self._received = list(received)

    def wait(self, timeout: float | None) -> int | None:
        return self._received.pop(0)


def test_sighup_rereads_the_collectors_file(tmp_path: Path) -> None:
    fields = tmp_path / "fields.csv"
    fields.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n")
    settings = resolve_settings({"nvml": "fake:t4-1x", "address": "127.0.0.1:0", "collectors": str(fields)}, {})
    exporter = start(settings, {})
    try:
        wait_for(lambda: exporter.holder.current().collected_at is not None, "the first collection")
        assert {f.name for f in parse(exporter.holder.current().body)} == {"DCGM_FI_DEV_GPU_TEMP"}
        assert exporter.xid_watch is None
        fields.write_text("DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).\n")
        before = exporter.holder.current().collected_at
        serve_until_stopped(exporter, Signals(RELOAD, 15))
        wait_for(lambda: exporter.holder.current().collected_at != before, "a collection after the reload")
        assert {f.name for f in parse(exporter.holder.current().body)} == {"DCGM_FI_DEV_SM_CLOCK"}
        fields.write_text("broken\n")
        serve_until_stopped(exporter, Signals(RELOAD, 15))  # a failed reload keeps collecting as before
        assert exporter.loop is not None and exporter.collector is not None
        assert [c.name for c in exporter.collector.counters] == ["DCGM_FI_DEV_SM_CLOCK"]
    finally:
        exporter.stop()


def test_dispatch_and_one_line_errors(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DCGM_EXPORTER_INTERVAL", raising=False)
    assert cli.AGENTS["metrics-exporter"] == "gpu_operator.agents.metrics_exporter.command"
    assert cli.main(["metrics-exporter", "--nvml", "fake:t4-1x", "--collect-interval", "-5"]) == 1
    assert capsys.readouterr().err == (
        "gpu-operator-agent metrics-exporter: invalid value '-5' for --collect-interval: "
        "must be a positive number of milliseconds\n"
    )


def test_the_exporter_loads_the_api_client_only_when_it_asks_the_api_server() -> None:
    """lightkube and httpx2 cost an exporter ~6 MiB of its memory goal; most exporters never ask the API server."""
    probe = ("import sys, gpu_operator.agents.metrics_exporter.command as c; "
             "print(sorted({'lightkube', 'httpx2'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.strip() == "[]"
