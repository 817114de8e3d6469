"""The operand deploy labels and the state label at every end of a MIG change: success, already applied, failure."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_operator.agents.mig_manager.config import load_config
from gpu_operator.agents.mig_manager.hardware import MigHardware
from gpu_operator.agents.mig_manager.operand_labels import CLIENT_LABEL, PAUSED, OperandLabels
from gpu_operator.agents.mig_manager.reconfigure import STATE_LABEL, Reconfigurer, Settings
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
from tests.agents.kube.fake_apiserver import FakeApiServer
from tests.agents.mig_manager.conftest import NODE

DP = "nvidia.com/gpu.deploy.device-plugin"
GFD = "nvidia.com/gpu.deploy.gpu-feature-discovery"
EXPORTER = "nvidia.com/gpu.deploy.dcgm-exporter"
DCGM = "nvidia.com/gpu.deploy.dcgm"
NVSM = "nvidia.com/gpu.deploy.nvsm"
#: A node as an earlier run left it (rebooted or died with the operands paused), with a value that is neither
#: true nor false (the driver manager's pause) and a label that is absent (nvsm).
LEFT_PAUSED = {DP: PAUSED, GFD: PAUSED, EXPORTER: "false", DCGM: "paused-for-driver-upgrade"}
#: What NVIDIA's `maybeSetTrue` gives those back, except the value that is neither true nor false, kept as it was.
RESTORED = {DP: "true", GFD: "true", EXPORTER: "false", DCGM: "paused-for-driver-upgrade", NVSM: "true"}
CONFIG = """version: v1
mig-configs:
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices: {1g.10gb: 7}
  all-2g.20gb:
    - devices: all
      mig-enabled: true
      mig-devices: {2g.20gb: 3}
  too-much:
    - devices: all
      mig-enabled: true
      mig-devices: {3g.40gb: 2, 2g.20gb: 1}
"""


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        running.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": dict(LEFT_PAUSED)}})
        yield running


def _manager(server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path) -> Reconfigurer:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    return Reconfigurer(server.client(), MigHardware(library), load_config(path),
                        Settings(NODE, "gpu-operator", poll_interval=0.01))


def _labels(server: FakeApiServer) -> dict[str, str]:
    node = server.get("nodes", NODE)
    assert node is not None
    return node["metadata"]["labels"]


def _set_labels(server: FakeApiServer, labels: dict[str, str]) -> None:
    server.update("nodes", NODE, None, lambda node: node["metadata"].__setitem__("labels", dict(labels)))


def _patches(server: FakeApiServer, since: int) -> list[dict[str, str | None]]:
    return [r.body["metadata"]["labels"] for r in server.requests[since:] if r.method == "PATCH"]


def _operands(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k.startswith("nvidia.com/gpu.deploy.")}


def test_pause_and_restore_values() -> None:
    """Paused: every label but the `false` ones (client only when present); restored: NVIDIA's `maybeSetTrue`
    for absent, empty and `paused-for-mig-change`, any other value as it was.

    NVIDIA mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go `shutdownKubernetesGPUClients` /
    `maybeSetPaused` (the client label only when `len(r.gpuClientDeployed) > 0`) and `setState` / `maybeSetTrue`.
    """
    operands = OperandLabels.read({**LEFT_PAUSED, CLIENT_LABEL: "custom"})
    assert operands.pause() == {DCGM: PAUSED, NVSM: PAUSED, CLIENT_LABEL: PAUSED}  # DP and GFD already are
    assert operands.paused == {DP, GFD, DCGM, NVSM, CLIENT_LABEL}
    restored = {**RESTORED, CLIENT_LABEL: "custom"}
    del restored[EXPORTER]  # false was never paused: nothing to write
    assert operands.restore() == restored
    assert operands.restore() == {}  # nothing left to write
    for absent in ({}, {CLIENT_LABEL: ""}):
        assert CLIENT_LABEL not in OperandLabels.read(absent).pause()
        assert CLIENT_LABEL not in OperandLabels.read(absent).restore()
    assert OperandLabels.read({CLIENT_LABEL: "false"}).pause() == {
        DP: PAUSED, GFD: PAUSED, EXPORTER: PAUSED, DCGM: PAUSED, NVSM: PAUSED}


def test_already_applied_restores_every_operand_label_and_writes_success_only(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    """The layout is already in place: no `pending`, the labels an earlier run left paused come back, `success`.

    NVIDIA mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go `Run`: `isConfigAlreadyApplied` ->
    `setState(migStateSuccess)`, and `setState` writes every operand label through `maybeSetTrue` from the values
    `getCurrentNodeLabels` read (whether or not this run paused it) before it writes the state.
    """
    manager = _manager(server, library, tmp_path)
    assert manager.reconfigure("all-1g.10gb") == "success"
    _set_labels(server, LEFT_PAUSED)
    before = len(server.requests)
    assert manager.reconfigure("all-1g.10gb") == "success"
    assert _patches(server, before) == [
        {DP: "true", GFD: "true", NVSM: "true"},  # only what differs is written; exporter and dcgm are as they were
        {STATE_LABEL: "success"},
    ]
    assert _labels(server) == {**RESTORED, STATE_LABEL: "success"}


def test_a_config_that_does_not_validate_restores_the_labels_too(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    """A config name the file lacks: `failed`, and the labels an earlier run left paused come back.

    NVIDIA mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go `Run`: `validateMigConfig` fails ->
    `setState(migStateFailed)`, which restores the operand labels (`maybeSetTrue`) before writing `failed`.
    """
    before = len(server.requests)
    assert _manager(server, library, tmp_path).reconfigure("missing") == "failed"
    patches = _patches(server, before)
    assert patches[-1] == {STATE_LABEL: "failed"} and "pending" not in [p.get(STATE_LABEL) for p in patches]
    assert _operands(_labels(server)) == RESTORED


@pytest.mark.parametrize(("config", "state"), [("all-2g.20gb", "success"), ("too-much", "failed")])
def test_a_change_pauses_then_gives_every_label_its_value_back(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path, config: str, state: str
) -> None:
    """pending -> paused -> restored -> success or failed; the client label and a non-true value come back as
    they were, the labels left paused and the absent one as `true`.

    NVIDIA mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go `Run` (`setNodeLabel(migConfigStateLabel,
    "pending")`, then `shutdownKubernetesGPUClients`; `restartKubernetesGPUClients` then `setState(migStateSuccess)`,
    or on a failed apply `setState(migStateFailed)`) and `setState`.
    """
    manager = _manager(server, library, tmp_path)
    assert manager.reconfigure("all-1g.10gb") == "success"
    _set_labels(server, {**LEFT_PAUSED, CLIENT_LABEL: "true"})
    before = len(server.requests)
    assert manager.reconfigure(config) == state
    assert _patches(server, before) == [
        {STATE_LABEL: "pending"},
        {DCGM: PAUSED, NVSM: PAUSED, CLIENT_LABEL: PAUSED},
        {DP: "true", GFD: "true", DCGM: "paused-for-driver-upgrade", NVSM: "true", CLIENT_LABEL: "true"},
        {STATE_LABEL: state},
    ]
    assert _operands(_labels(server)) == {**RESTORED, CLIENT_LABEL: "true"}


def test_labels_that_cannot_be_read_are_not_written(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    """Only `failed` is written when the node cannot be read: no value to restore is known.

    NVIDIA mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go `Run` calls `setState(migStateFailed)` after
    `getCurrentNodeLabels` failed, and `setState` would then write `true` over every operand label, `false` ones
    included (their value was never read); ours writes the state only.
    """
    server.fail("GET", f"/nodes/{NODE}$", 403, reason="Forbidden")
    before = len(server.requests)
    assert _manager(server, library, tmp_path).reconfigure("all-1g.10gb") == "failed"
    assert _patches(server, before) == [{STATE_LABEL: "failed"}]
    assert _operands(_labels(server)) == LEFT_PAUSED
