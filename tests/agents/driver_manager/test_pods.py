"""Which pods the driver manager waits for, evicts, drains, or refuses to evict."""

from __future__ import annotations

import pytest

from gpu_operator.agents.driver_manager.labels import DRAIN_SKIP_LABEL, PAUSED
from gpu_operator.agents.driver_manager.pods import (
    PodFacts,
    drain_pods,
    gpu_pods,
    refusal,
    stale_operand_pods,
    uses_gpu,
)
from gpu_operator.agents.driver_manager.settings import DrainOptions
from gpu_operator.facts.label_selector import parse_selector

PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
CLIENT = "nvidia.com/gpu.deploy.client"


@pytest.mark.parametrize(("names", "gpu"), [
    (["nvidia.com/gpu"], True),
    (["cpu", "nvidia.com/gpu.shared"], True),
    (["nvidia.com/mig-1g.10gb"], True),
    (["nvidia.com/gpudirect-rdma"], True),  # the prefix NVIDIA tests, as it tests it
    (["cpu", "memory", "rdma/rdma_shared_device_a"], False),
    ([], False),
])
def test_gpu_resources(names: list[str], gpu: bool) -> None:
    assert uses_gpu(names) is gpu


def test_finished_pods_hold_no_gpu() -> None:
    pods = [PodFacts("a", "run", gpu=True), PodFacts("a", "done", gpu=True, phase="Succeeded"), PodFacts("a", "cpu")]
    assert [p.name for p in gpu_pods(pods)] == ["run"]


@pytest.mark.parametrize(("pod", "options", "gpu", "reason"), [
    (PodFacts("a", "p", controller="ReplicaSet"), DrainOptions(), True, ""),
    (PodFacts("a", "p", controller="DaemonSet"), DrainOptions(), True, "DaemonSet"),
    (PodFacts("a", "p", controller="DaemonSet"), DrainOptions(), False, ""),
    (PodFacts("a", "p", controller="Job", mirror=True), DrainOptions(), True, "static pod"),
    (PodFacts("a", "p", controller="Job", empty_dir=True), DrainOptions(), False, "DRAIN_DELETE_EMPTYDIR_DATA"),
    (PodFacts("a", "p", controller="Job", empty_dir=True), DrainOptions(delete_emptydir_data=True), False, ""),
    (PodFacts("a", "p"), DrainOptions(), False, "DRAIN_USE_FORCE"),
    (PodFacts("a", "p"), DrainOptions(force=True), True, ""),
])
def test_refusals(pod: PodFacts, options: DrainOptions, gpu: bool, reason: str) -> None:
    found = refusal(pod, options, gpu=gpu)
    assert (reason in found) if reason else found == ""


def test_drain_skips_daemonsets_mirrors_skip_label_finished_and_unselected_pods() -> None:
    pods = [
        PodFacts("a", "web", labels={"tier": "web"}, controller="ReplicaSet"),
        PodFacts("a", "db", labels={"tier": "db"}, controller="StatefulSet"),
        PodFacts("a", "ds", controller="DaemonSet"),
        PodFacts("a", "static", mirror=True),
        PodFacts("a", "operator", labels={DRAIN_SKIP_LABEL: "true"}, controller="ReplicaSet"),
        PodFacts("a", "done", controller="Job", phase="Failed"),
    ]
    assert [p.name for p in drain_pods(pods, DrainOptions())] == ["web", "db"]
    assert [p.name for p in drain_pods(pods, DrainOptions(pod_selector=parse_selector("tier=db")))] == ["db"]


def test_stale_operand_pods_are_those_whose_selector_the_paused_label_no_longer_matches() -> None:
    labels = {PLUGIN: PAUSED, CLIENT: PAUSED, "nvidia.com/gpu.deploy.dcgm": "true"}
    pods = [
        PodFacts("gpu-operator", "plugin", node_selector={PLUGIN: "true"}),
        PodFacts("other", "plugin-elsewhere", node_selector={PLUGIN: "true"}),
        PodFacts("vendor", "client", node_selector={CLIENT: "true"}),
        PodFacts("gpu-operator", "dcgm", node_selector={"nvidia.com/gpu.deploy.dcgm": "true"}),
        PodFacts("gpu-operator", "driver", node_selector={"nvidia.com/gpu.deploy.driver": "true"}),
    ]
    found = stale_operand_pods(pods, labels, [PLUGIN, CLIENT, "nvidia.com/gpu.deploy.dcgm"], "gpu-operator")
    assert [p.key for p in found] == ["gpu-operator/plugin", "vendor/client"]
