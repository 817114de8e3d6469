"""The MIG manager on a simulated A100 node against the fake API server: layouts, labels, failure and rollback."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pynvml
import pytest

from gpu_operator.agents.mig_manager.cdi import MANAGEMENT_SPEC, CdiRefresh
from gpu_operator.agents.mig_manager.config import load_config
from gpu_operator.agents.mig_manager.hardware import MigHardware
from gpu_operator.agents.mig_manager.reconfigure import (
    PAUSED,
    REASON_ANNOTATION,
    STATE_LABEL,
    Reconfigurer,
    Settings,
)
from gpu_operator.agents.nvml.simulated import SimulatedLibrary, load_profile
from gpu_operator.mig import default_config, to_yaml
from tests.agents.kube.fake_apiserver import FakeApiServer
from tests.support.reference import reference_file

NODE = "gpu-node-0"
NAMESPACE = "gpu-operator"
DEPLOY = {
    "nvidia.com/gpu.deploy.device-plugin": "true",
    "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
    "nvidia.com/gpu.deploy.dcgm-exporter": "false",
    "nvidia.com/gpu.deploy.dcgm": "true",
    "nvidia.com/gpu.deploy.nvsm": "true",
}


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        running.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": dict(DEPLOY)}})
        yield running


@pytest.fixture
def shipped_config(tmp_path: Path) -> Path:
    """The default config the operator ships (`default-mig-parted-config`)."""
    path = tmp_path / "config-default.yaml"
    path.write_text(to_yaml(default_config()))
    return path


def _reconfigurer(server: FakeApiServer, library: SimulatedLibrary, config_path: Path) -> Reconfigurer:
    return Reconfigurer(
        server.client(), MigHardware(library), load_config(config_path), Settings(NODE, NAMESPACE, poll_interval=0.01)
    )


def _layout(library: SimulatedLibrary) -> list[tuple[bool, Counter[str]]]:
    return [
        (bool(gpu.mig and gpu.mig.current), Counter(p.profile for p in (gpu.mig.devices if gpu.mig else ())))
        for gpu in library.profile.gpus
    ]


def _label_patches(server: FakeApiServer) -> list[dict[str, str | None]]:
    return [r.body["metadata"]["labels"] for r in server.requests_to("PATCH", f"/nodes/{NODE}$")]


def _node(server: FakeApiServer) -> dict:
    node = server.get("nodes", NODE)
    assert node is not None
    return node


def test_sequence_of_layouts_with_labels(
    server: FakeApiServer, library: SimulatedLibrary, shipped_config: Path
) -> None:
    manager = _reconfigurer(server, library, shipped_config)
    expected = {
        "all-disabled": (False, Counter()),
        "all-1g.10gb": (True, Counter({"1g.10gb": 7})),
        "all-balanced": (True, Counter({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1})),
    }
    for name in ("all-disabled", "all-1g.10gb", "all-balanced", "all-disabled"):
        before = len(server.requests)
        assert manager.reconfigure(name) == "success", _node(server)["metadata"].get("annotations")
        assert _layout(library) == [expected[name]] * 8
        patches = [r.body["metadata"]["labels"] for r in server.requests[before:] if r.method == "PATCH"]
        paused = {label: PAUSED for label, value in DEPLOY.items() if value == "true"}
        restored = {label: "true" for label, value in DEPLOY.items() if value == "true"}
        assert patches == [{STATE_LABEL: "pending"}, paused, restored, {STATE_LABEL: "success"}]
        labels = _node(server)["metadata"]["labels"]
        assert {k: labels[k] for k in DEPLOY} == DEPLOY  # dcgm-exporter stayed false throughout
    # the same layout again is success at once, with no pause
    before = len(server.requests)
    assert manager.reconfigure("all-disabled") == "success"
    assert [r.body["metadata"]["labels"] for r in server.requests[before:] if r.method == "PATCH"] == [
        {STATE_LABEL: "success"}
    ]


def test_mig_devices_follow_the_layout(server: FakeApiServer, library: SimulatedLibrary, shipped_config: Path) -> None:
    assert _reconfigurer(server, library, shipped_config).reconfigure("all-balanced") == "success"
    hardware = MigHardware(library)
    assert hardware.gpus()[0].devices == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert library.nvmlDeviceGetMaxMigDeviceCount(library.nvmlDeviceGetHandleByIndex(0)) == 7
    handle = library.nvmlDeviceGetHandleByIndex(0)
    assert len(library.profile.gpus[0].mig.devices) == 4
    assert library.nvmlDeviceGetMigDeviceHandleByIndex(handle, 3) is not None


def test_impossible_layout_fails_and_keeps_the_previous_one(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "version: v1\nmig-configs:\n"
        "  all-1g.10gb:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {1g.10gb: 7}\n"
        "  too-much:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {3g.40gb: 2, 2g.20gb: 1}\n"
    )
    manager = _reconfigurer(server, library, config)
    assert manager.reconfigure("all-1g.10gb") == "success"
    before = _layout(library)
    assert manager.reconfigure("too-much") == "failed"
    assert _layout(library) == before
    node = _node(server)
    assert node["metadata"]["labels"][STATE_LABEL] == "failed"
    assert "cannot create a 2g.20gb instance" in node["metadata"]["annotations"][REASON_ANNOTATION]
    assert {k: node["metadata"]["labels"][k] for k in DEPLOY} == DEPLOY
    # the next success clears the reason
    assert manager.reconfigure("all-1g.10gb") == "success"
    assert REASON_ANNOTATION not in (_node(server)["metadata"].get("annotations") or {})


def test_unknown_config_name_and_profile_fail_without_touching_the_node(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("version: v1\nmig-configs:\n  odd:\n    - devices: all\n      mig-enabled: true\n"
                      "      mig-devices: {1g.18gb: 7}\n")
    manager = _reconfigurer(server, library, config)
    before = _layout(library)
    assert manager.reconfigure("odd") == "failed"
    assert "has no MIG profile 1g.18gb" in _node(server)["metadata"]["annotations"][REASON_ANNOTATION]
    assert manager.reconfigure("missing") == "failed"
    assert "no MIG config named 'missing'" in _node(server)["metadata"]["annotations"][REASON_ANNOTATION]
    assert _layout(library) == before
    assert all(set(p) == {STATE_LABEL} for p in _label_patches(server))


def test_waits_for_operand_pods_and_fails_restoring_labels_when_they_stay(
    server: FakeApiServer, library: SimulatedLibrary, shipped_config: Path
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "dp-abc", "namespace": NAMESPACE, "labels": {"app": "nvidia-device-plugin-daemonset"}},
        "spec": {"nodeName": NODE},
    }
    server.add(pod)
    manager = Reconfigurer(
        server.client(),
        MigHardware(library),
        load_config(shipped_config),
        Settings(NODE, NAMESPACE, pod_timeout=0.05, poll_interval=0.01),
    )
    before = _layout(library)
    assert manager.reconfigure("all-disabled") == "failed"
    node = _node(server)
    assert "dp-abc" in node["metadata"]["annotations"][REASON_ANNOTATION]
    assert {k: node["metadata"]["labels"][k] for k in DEPLOY} == DEPLOY
    assert _layout(library) == before
    # once the pod goes (the DaemonSet controller removes it when its label is paused), the change goes through
    server.remove("pods", "dp-abc", NAMESPACE)
    assert manager.reconfigure("all-disabled") == "success"


def test_upstream_default_config_applies(server: FakeApiServer, library: SimulatedLibrary) -> None:
    manager = _reconfigurer(server, library, reference_file("mig-parted/config-default.yaml"))
    for name in ("all-disabled", "all-1g.10gb", "all-balanced", "all-7g.80gb", "all-1g.20gb", "all-disabled"):
        assert manager.reconfigure(name) == "success", _node(server)["metadata"].get("annotations")
    assert _layout(library) == [(False, Counter())] * 8


def _pod(name: str, app: str, node: str = NODE) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": app}},
        "spec": {"nodeName": node},
    }


def test_validator_pods_are_deleted_on_this_node_only(
    server: FakeApiServer, library: SimulatedLibrary, shipped_config: Path
) -> None:
    for pod in (
        _pod("cuda-1", "nvidia-cuda-validator"),
        _pod("dp-validator-1", "nvidia-device-plugin-validator"),
        _pod("operator-validator-1", "nvidia-operator-validator"),
        _pod("operator-validator-dra-1", "nvidia-operator-validator-dra"),  # its twin on DRA pools
        _pod("operator-validator-2", "nvidia-operator-validator", node="other-node"),
    ):
        server.add(pod)
    assert _reconfigurer(server, library, shipped_config).reconfigure("all-disabled") == "success"
    assert [p["metadata"]["name"] for p in server.objects("pods", NAMESPACE)] == ["operator-validator-2"]


def test_cdi_refresh_runs_after_apply_and_its_failure_is_failed(
    server: FakeApiServer, library: SimulatedLibrary, shipped_config: Path
) -> None:
    commands: list[list[str]] = []
    answers = iter([(0, ""), (0, ""), (0, ""), (0, ""), (1, "permission denied")])

    def runner(command: Sequence[str]) -> tuple[int, str]:
        commands.append(list(command))
        return next(answers)

    env = {"NVIDIA_CDI_HOOK_PATH": "/opt/nvidia/toolkit/nvidia-cdi-hook", "NVIDIA_DRIVER_ROOT": "/run/nvidia/driver"}
    manager = Reconfigurer(
        server.client(),
        MigHardware(library),
        load_config(shipped_config),
        Settings(NODE, NAMESPACE, poll_interval=0.01),
        after_apply=CdiRefresh.from_environment(env, runner),
    )
    assert manager.reconfigure("all-disabled") == "success"
    assert commands == [
        ["chroot", "/host/run/nvidia/driver", "nvidia-smi"],
        ["chroot", "/host", "/opt/nvidia/toolkit/nvidia-ctk", "system", "create-device-nodes", "--control-devices",
         "--dev-root=/run/nvidia/driver"],
        ["chroot", "/host", "/opt/nvidia/toolkit/nvidia-ctk", "cdi", "generate", "--mode=management",
         "--driver-root=/run/nvidia/driver", "--dev-root=/run/nvidia/driver",
         "--nvidia-cdi-hook-path=/opt/nvidia/toolkit/nvidia-cdi-hook", f"--output={MANAGEMENT_SPEC}"],
    ]
    assert manager.reconfigure("all-1g.10gb") == "failed"
    node = _node(server)
    reason = node["metadata"]["annotations"][REASON_ANNOTATION]
    assert "system create-device-nodes failed (1): permission denied" in reason
    assert {k: node["metadata"]["labels"][k] for k in DEPLOY} == DEPLOY


CLIENT_LABEL = "nvidia.com/gpu.deploy.client"


def _client_pod(name: str, namespace: str, *, node: str = NODE, daemonset: bool = True,
                selector: str = CLIENT_LABEL) -> dict:
    """A pod of a third-party GPU client: a DaemonSet's (controller owner reference) selecting on `selector`."""
    owners = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name.rsplit("-", 1)[0], "uid": "u-1",
               "controller": True}] if daemonset else []
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": owners},
        "spec": {"nodeName": node, "nodeSelector": {selector: "true"}},
    }


class SlowDaemonSetController:
    """The DaemonSet controller and kubelet for the client pods, polled through the manager's sleep: once the
    node's client label is no longer `true`, each pod of `names` is deleted (Terminating) and goes away only
    `linger` polls later, or never when `linger` is None. Each poll records the state of the pods and GPU 0."""

    def __init__(self, server: FakeApiServer, library: SimulatedLibrary, names: Sequence[tuple[str, str]],
                 linger: int | None) -> None:
        self.server, self.library, self.names, self.linger = server, library, names, linger
        self.polls: list[tuple[str, tuple[bool, Counter[str]]]] = []
        self.now = 0.0
        self._terminating_for = 0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        labels = _node(self.server)["metadata"]["labels"]
        present = [(n, ns) for n, ns in self.names if self.server.get("pods", n, ns) is not None]
        if labels.get(CLIENT_LABEL) != "true" and present:
            for name, namespace in present:
                self.server.update("pods", name, namespace,
                                   lambda pod: pod["metadata"].setdefault("deletionTimestamp", "2026-01-01T00:00:00Z"))
            self._terminating_for += 1
            if self.linger is not None and self._terminating_for > self.linger:
                for name, namespace in present:
                    self.server.remove("pods", name, namespace)
        state = "terminating" if present else "gone"
        self.polls.append((state, _layout(self.library)[0]))


def test_waits_for_gpu_client_daemonset_pods_still_terminating(
    server: FakeApiServer, library: SimulatedLibrary, shipped_config: Path
) -> None:
    """NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go `waitForPodsToBeDeleted` and
    `waitForPodsWithNodeSelector`: after pausing `nvidia.com/gpu.deploy.client`, the MIG layout changes only once
    no pod on the node, in any namespace, that a DaemonSet controls and whose nodeSelector has that key is left;
    a pod still Terminating (its deletion not finished) still counts. Other pods are not waited for."""
    server.update("nodes", NODE, None, lambda node: node["metadata"]["labels"].update({CLIENT_LABEL: "true"}))
    clients = [("gpu-burn-x1", "workloads"), ("profiler-x2", "monitoring")]
    for name, namespace in clients:
        server.add(_client_pod(name, namespace))
    server.add(_client_pod("gpu-burn-x3", "workloads", node="other-node"))  # another node's
    server.add(_client_pod("loose-pod", "workloads", daemonset=False))  # not a DaemonSet's
    server.add(_client_pod("unrelated-x4", "workloads", selector="example.com/other"))  # not a GPU client
    controller = SlowDaemonSetController(server, library, clients, linger=3)
    manager = Reconfigurer(server.client(), MigHardware(library), load_config(shipped_config),
                           Settings(NODE, NAMESPACE, poll_interval=1.0),
                           sleep=controller.sleep, clock=controller.clock)
    before = _layout(library)[0]
    assert manager.reconfigure("all-disabled") == "success"
    terminating = [layout for state, layout in controller.polls if state == "terminating"]
    assert len(terminating) == 4 and all(layout == before for layout in terminating)  # nothing changed meanwhile
    assert _layout(library) == [(False, Counter())] * 8
    assert _node(server)["metadata"]["labels"][CLIENT_LABEL] == "true"
    left = sorted(p["metadata"]["name"] for p in server.objects("pods"))
    assert left == ["gpu-burn-x3", "loose-pod", "unrelated-x4"]


def test_a_gpu_client_pod_that_never_goes_fails_without_touching_the_gpus(
    server: FakeApiServer, library: SimulatedLibrary, shipped_config: Path
) -> None:
    """NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go `waitForPodsWithNodeSelector`: the wait is
    bounded (five minutes); ours then reports `failed` with the pod named and the labels restored."""
    server.update("nodes", NODE, None, lambda node: node["metadata"]["labels"].update({CLIENT_LABEL: "true"}))
    server.add(_client_pod("stuck-x1", "workloads"))
    controller = SlowDaemonSetController(server, library, [("stuck-x1", "workloads")], linger=None)
    manager = Reconfigurer(server.client(), MigHardware(library), load_config(shipped_config),
                           Settings(NODE, NAMESPACE, pod_timeout=300.0, poll_interval=5.0),
                           sleep=controller.sleep, clock=controller.clock)
    before = _layout(library)
    assert manager.reconfigure("all-disabled") == "failed"
    assert _layout(library) == before
    node = _node(server)
    assert "workloads/stuck-x1" in node["metadata"]["annotations"][REASON_ANNOTATION]
    assert node["metadata"]["labels"][CLIENT_LABEL] == "true"
    assert controller.now >= 300.0


class PartlyMigCapable(SimulatedLibrary):
    """GPU 7 is not MIG-capable: NVML answers NOT_SUPPORTED for its MIG mode and profiles."""

    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        if handle.index == 7:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return super().nvmlDeviceGetMigMode(handle)

    def nvmlDeviceGetGpuInstanceProfileInfo(self, handle: Any, profile: int, *args: Any) -> Any:
        if handle.index == 7:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return super().nvmlDeviceGetGpuInstanceProfileInfo(handle, profile, *args)

    def nvmlDeviceSetMigMode(self, handle: Any, mode: int) -> int:
        assert handle.index != 7, "the MIG mode of a GPU without MIG was set"
        return super().nvmlDeviceSetMigMode(handle, mode)


def test_devices_all_skips_gpus_that_are_not_mig_capable(
    server: FakeApiServer, shipped_config: Path, tmp_path: Path
) -> None:
    """NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-parted/apply/mode.go and apply/config.go (the walk callbacks) with
    api/spec/v1/helpers.go `MatchesAllDevices`: a GPU that is not MIG-capable is skipped when the layout matches it
    by `devices: all`, or leaves MIG off; enabling MIG on it by index is an error."""
    library = PartlyMigCapable(load_profile("a100-8x-mig"), sleep=lambda _: None)
    library.nvmlInitWithFlags(0)
    manager = _reconfigurer(server, library, shipped_config)
    assert manager.reconfigure("all-3g.40gb") == "success", _node(server)["metadata"].get("annotations")
    assert manager.reconfigure("all-balanced") == "success", _node(server)["metadata"].get("annotations")
    assert [g.devices for g in MigHardware(library).gpus()[:7]] == [{"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}] * 7
    assert not MigHardware(library).gpus()[7].capable
    config = tmp_path / "by-index.yaml"
    config.write_text("version: v1\nmig-configs:\n"
                      "  off-on-7:\n    - {devices: [7], mig-enabled: false}\n"
                      "  on-7:\n    - {devices: [6, 7], mig-enabled: true, mig-devices: {7g.80gb: 1}}\n")
    by_index = _reconfigurer(server, library, config)
    assert by_index.reconfigure("off-on-7") == "success"
    assert by_index.reconfigure("on-7") == "failed"
    assert "enables MIG on GPU 7 (0x20B210DE), which is not MIG-capable" in \
        _node(server)["metadata"]["annotations"][REASON_ANNOTATION]


def test_a_node_that_cannot_be_read_is_failed(
    server: FakeApiServer, library: SimulatedLibrary, shipped_config: Path
) -> None:
    """NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go `Run`: when `getCurrentNodeLabels` fails the
    state is set to `failed` (`setState(migStateFailed)`), not left at its previous value."""
    server.fail("GET", f"/nodes/{NODE}$", 403, reason="Forbidden")
    before = _layout(library)
    assert _reconfigurer(server, library, shipped_config).reconfigure("all-disabled") == "failed"
    node = _node(server)
    assert node["metadata"]["labels"][STATE_LABEL] == "failed"
    assert node["metadata"]["annotations"][REASON_ANNOTATION].startswith("cannot read the node's labels")
    assert _layout(library) == before
