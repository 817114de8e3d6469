"""Host GPU clients stopped around a MIG change: the clients file, systemctl through a replaceable runner, and the
order against the operands' labels and the GPU writes on a simulated A100 node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from gpu_operator.agents.mig_manager.config import load_config
from gpu_operator.agents.mig_manager.hardware import MigHardware
from gpu_operator.agents.mig_manager.host_clients import HostClientsError, HostGpuClients, load_clients
from gpu_operator.agents.mig_manager.reconfigure import PAUSED, REASON_ANNOTATION, STATE_LABEL, Reconfigurer, Settings
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
from gpu_operator.mig import DEFAULT_GPU_CLIENTS, default_config, to_yaml
from tests.agents.kube.fake_apiserver import FakeApiServer

NODE = "gpu-node-0"
NAMESPACE = "gpu-operator"
DEVICE_PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
CLIENTS = ("nvidia-persistenced.service", "nvidia-dcgm.service", "nvidia-fabricmanager.service", "nvsm.service")


class Systemd:
    """The host's systemd as `chroot /host systemctl` answers it; every command is logged with the GPU layout and
    the device plugin's deploy label at that moment."""

    def __init__(self, states: dict[str, str], library: SimulatedLibrary | None = None,
                 server: FakeApiServer | None = None, refuse: Sequence[str] = ()) -> None:
        self.states = dict(states)
        self.library = library
        self.server = server
        self.refuse = set(refuse)
        self.log: list[tuple[str, str, object, object]] = []

    def __call__(self, command: Sequence[str]) -> tuple[int, str]:
        assert list(command[:3]) == ["chroot", "/host", "systemctl"]
        *verb, service = command[3:]
        state = self.states.get(service, "not-found")
        if verb[0] == "-q":
            return (0 if state == verb[1].removeprefix("is-") else 3), ""
        layout = None if self.library is None else _layout(self.library)[0]
        label = None if self.server is None else _labels(self.server).get(DEVICE_PLUGIN)
        self.log.append((verb[0], service, layout, label))
        if (verb[0], service) in self.refuse:
            return 1, f"Job for {service} failed"
        self.states[service] = "inactive" if verb[0] == "stop" else "active"
        return 0, ""


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        running.add({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": NODE, "labels": {DEVICE_PLUGIN: "true"}}})
        yield running


def _layout(library: SimulatedLibrary) -> list[tuple[bool, Counter[str]]]:
    return [(bool(g.mig and g.mig.current), Counter(p.profile for p in (g.mig.devices if g.mig else ())))
            for g in library.profile.gpus]


def _labels(server: FakeApiServer) -> dict[str, str]:
    node = server.get("nodes", NODE)
    assert node is not None
    return node["metadata"]["labels"]


def _manager(server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path, systemd: Systemd) -> Reconfigurer:
    config = tmp_path / "config.yaml"
    config.write_text(to_yaml(default_config()).replace("mig-configs:", "mig-configs:\n  too-much:\n"
                      "  - {devices: all, mig-enabled: true, mig-devices: {3g.40gb: 2, 2g.20gb: 1}}", 1))
    clients = HostGpuClients(CLIENTS, runner=systemd)
    return Reconfigurer(server.client(), MigHardware(library), load_config(config),
                        Settings(NODE, NAMESPACE, poll_interval=0.01), host_clients=clients)


BALANCED = (True, Counter({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}))
STATES = {"nvidia-persistenced.service": "active", "nvidia-dcgm.service": "failed",
          "nvidia-fabricmanager.service": "inactive"}


def test_running_clients_stop_after_the_pause_and_start_after_the_change(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    systemd = Systemd(STATES, library, server)
    before = _layout(library)[0]
    assert _manager(server, library, tmp_path, systemd).reconfigure("all-balanced") == "success"
    after = BALANCED
    assert systemd.log == [
        ("stop", "nvidia-persistenced.service", before, PAUSED),
        ("stop", "nvidia-dcgm.service", before, PAUSED),
        ("start", "nvidia-persistenced.service", after, PAUSED),
        ("start", "nvidia-dcgm.service", after, PAUSED),
    ]  # the inactive fabric manager and the absent nvsm are left alone, before and after
    assert systemd.states["nvidia-fabricmanager.service"] == "inactive"
    assert _labels(server)[DEVICE_PLUGIN] == "true" and _labels(server)[STATE_LABEL] == "success"


def test_clients_start_again_when_the_change_fails(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    systemd = Systemd(STATES, library, server)
    assert _manager(server, library, tmp_path, systemd).reconfigure("too-much") == "failed"
    assert [(verb, service) for verb, service, _, _ in systemd.log] == [
        ("stop", "nvidia-persistenced.service"), ("stop", "nvidia-dcgm.service"),
        ("start", "nvidia-persistenced.service"), ("start", "nvidia-dcgm.service")]
    assert systemd.log[-1][2] == _layout(library)[0]  # started once the previous layout was back


def test_a_client_that_will_not_stop_fails_the_change_before_the_gpus_are_touched(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    systemd = Systemd(STATES, library, server, refuse=[("stop", "nvidia-dcgm.service")])
    before = _layout(library)
    assert _manager(server, library, tmp_path, systemd).reconfigure("all-balanced") == "failed"
    assert _layout(library) == before
    assert [(verb, service) for verb, service, _, _ in systemd.log] == [
        ("stop", "nvidia-persistenced.service"), ("stop", "nvidia-dcgm.service"),
        ("start", "nvidia-persistenced.service")]
    node = server.get("nodes", NODE)
    assert node is not None
    assert "cannot stop host GPU client nvidia-dcgm.service (1): Job for nvidia-dcgm.service failed" in \
        node["metadata"]["annotations"][REASON_ANNOTATION]
    assert node["metadata"]["labels"][DEVICE_PLUGIN] == "true"


def test_a_client_that_will_not_start_again_is_the_failure_reason_after_a_good_change(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    systemd = Systemd(STATES, library, server, refuse=[("start", "nvidia-persistenced.service")])
    assert _manager(server, library, tmp_path, systemd).reconfigure("all-balanced") == "failed"
    assert _layout(library)[0] == BALANCED
    assert systemd.states["nvidia-dcgm.service"] == "active"  # every other client was still started
    node = server.get("nodes", NODE)
    assert node is not None
    reason = node["metadata"]["annotations"][REASON_ANNOTATION]
    assert reason.startswith("'all-balanced' was applied, but host GPU clients did not start again: "
                             "nvidia-persistenced.service (1: Job for nvidia-persistenced.service failed)")
    assert node["metadata"]["labels"][DEVICE_PLUGIN] == "true"


def test_the_clients_file(tmp_path: Path) -> None:
    assert load_clients(None) == DEFAULT_GPU_CLIENTS
    path = tmp_path / "clients.yaml"
    path.write_text("version: v1\nsystemd-services:\n  - nvidia-persistenced.service\n  - nvsm.service\n")
    assert load_clients(str(path)) == ("nvidia-persistenced.service", "nvsm.service")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: v2\nsystemd-services: [a]\n", "version must be v1, not 'v2'"),
        ("version: v1\nsystemd-services: a.service\n", "systemd-services must be a list of unit names"),
        ("version: v1\nservices: [a]\n", "unknown key(s) services"),
        ("[1]\n", "expected 'version: v1' and 'systemd-services'"),
        ("{{", "not valid YAML"),
    ],
)
def test_bad_clients_files_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "clients.yaml"
    path.write_text(text)
    with pytest.raises(HostClientsError, match=None) as refused:
        load_clients(str(path))
    assert message in str(refused.value) and str(path) in str(refused.value)
    with pytest.raises(HostClientsError, match="cannot read the GPU clients file"):
        load_clients(str(tmp_path / "absent.yaml"))


def _kubelet_manager(server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path, systemd: Systemd,
                     sleeps: list[float], kubelet: str = "kubelet.service") -> Reconfigurer:
    config = tmp_path / "config.yaml"
    config.write_text(to_yaml(default_config()))
    return Reconfigurer(server.client(), MigHardware(library), load_config(config),
                        Settings(NODE, NAMESPACE, poll_interval=0.01, kubelet_service=kubelet),
                        host_clients=HostGpuClients(CLIENTS, runner=systemd), sleep=sleeps.append)


def test_the_kubelet_stops_last_and_starts_last_across_a_mig_mode_change(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    """NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go `checkMigModeChangeRequired` (with host GPU
    clients, a needed mode change adds `HostKubeletService`, default `kubelet.service` from cmd/nvidia-mig-manager
    main.go, after the clients) and `Run` (30 s for the driver after `shutdownHostGPUClients` when the mode
    changes); `restartHostGPUClients` starts them in the order they were stopped."""
    systemd = Systemd({**STATES, "kubelet.service": "active"}, library, server)
    sleeps: list[float] = []
    before = _layout(library)[0]
    assert _kubelet_manager(server, library, tmp_path, systemd, sleeps).reconfigure("all-disabled") == "success"
    disabled = (False, Counter())
    assert systemd.log == [
        ("stop", "nvidia-persistenced.service", before, PAUSED),
        ("stop", "nvidia-dcgm.service", before, PAUSED),
        ("stop", "kubelet.service", before, PAUSED),
        ("start", "nvidia-persistenced.service", disabled, PAUSED),
        ("start", "nvidia-dcgm.service", disabled, PAUSED),
        ("start", "kubelet.service", disabled, PAUSED),
    ]
    assert sleeps == [30.0]
    # MIG on again (a mode change), then a new layout with MIG staying on: no kubelet stop, no wait for the driver
    assert _kubelet_manager(server, library, tmp_path, systemd, sleeps).reconfigure("all-enabled") == "success"
    systemd.log.clear()
    sleeps.clear()
    assert _kubelet_manager(server, library, tmp_path, systemd, sleeps).reconfigure("all-1g.10gb") == "success"
    assert [service for verb, service, _, _ in systemd.log if verb == "stop"] == [
        "nvidia-persistenced.service", "nvidia-dcgm.service"]
    assert sleeps == []


def test_an_empty_kubelet_service_is_never_stopped(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    """NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go `checkMigModeChangeRequired`: the kubelet is
    added only when `HostKubeletService` is not empty."""
    systemd = Systemd({**STATES, "kubelet.service": "active"}, library, server)
    manager = _kubelet_manager(server, library, tmp_path, systemd, [], kubelet="")
    assert manager.reconfigure("all-disabled") == "success"
    assert "kubelet.service" not in [service for _, service, _, _ in systemd.log]
    assert systemd.states["kubelet.service"] == "active"
