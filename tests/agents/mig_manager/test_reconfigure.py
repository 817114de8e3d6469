"""The MIG manager on a simulated A100 node against the fake API server: layouts, labels, failure and rollback."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

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


@pytest.fixture
def library() -> SimulatedLibrary:
    lib = SimulatedLibrary(load_profile("a100-8x-mig"), sleep=lambda _: None)
    lib.nvmlInitWithFlags(0)
    return lib


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
    answers = iter([(0, ""), (0, ""), (1, "permission denied")])

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
