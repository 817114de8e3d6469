"""Pod labels from the kubelet's pod-resources API (a fake kubelet on a real unix-socket gRPC channel).

A pod holding a GPU puts `pod`, `namespace` and `container` on exactly that GPU's series - or that GPU
instance's, for MIG devices - and on no other.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from prometheus_client.metrics_core import Metric

from gpu_operator.agents.kubelet import PodResourcesClient
from gpu_operator.agents.metrics_exporter import Attribution, IdentityOptions
from gpu_operator.agents.metrics_exporter.entities import DEVICE_NAME
from gpu_operator.agents.metrics_exporter.pod_metadata import LabelRules, PodMetadata
from gpu_operator.agents.metrics_exporter.variants import PodLabelling
from gpu_operator.agents.nvml.simulated import load_profile, mig_uuid
from tests.agents.kubelet.fake_kubelet import FakeKubelet, container, fake_kubelet, pod
from tests.agents.metrics_exporter.support import HOST, families_of, make_collector

H100 = load_profile("h100-8x")
MIXED = load_profile("a100-4x-mixed-mig")
POD = {"pod": "trainer-0", "namespace": "ml", "container": "main"}


@pytest.fixture
def kubelet() -> Iterator[FakeKubelet]:
    with fake_kubelet() as fake:
        yield fake


def attributed(families: Mapping[str, Metric]) -> dict[tuple[str, str | None], dict[str, str]]:
    """(gpu, GPU instance) -> the pod labels its series carry; checks every family agrees."""
    seen: dict[tuple[str, str | None], dict[str, str]] = {}
    for family in families.values():
        for sample in family.samples:
            key = (sample.labels["gpu"], sample.labels.get("GPU_I_ID"))
            extra = {k: v for k, v in sample.labels.items() if k in ("pod", "namespace", "container", "pod_uid",
                                                                     "vgpu", "pod_name", "pod_namespace",
                                                                     "container_name", "team")}
            assert seen.setdefault(key, extra) == extra, (family.name, key)
    return seen


def collect(profile: str, kubelet: FakeKubelet, **options: object) -> dict[str, Metric]:
    attribution = Attribution(kubernetes=True, **options)  # type: ignore[arg-type]
    collector = make_collector(profile, attribution=attribution, pods=PodResourcesClient(kubelet.socket_path))
    return families_of(collector, cycles=1)


def test_a_pod_labels_exactly_its_gpus_series(kubelet: FakeKubelet) -> None:
    kubelet.pods = [
        pod("trainer-0", "ml", container("main", ("nvidia.com/gpu", [H100.gpus[2].uuid]))),
        pod("web", "default", container("nginx", ("example.com/nic", [H100.gpus[5].uuid]))),
    ]
    labels = attributed(collect("h100-8x", kubelet))
    assert labels[("2", None)] == POD
    assert all(labels[(str(i), None)] == {} for i in range(8) if i != 2)


def test_time_sliced_replicas_map_to_their_gpu(kubelet: FakeKubelet) -> None:
    uuid = H100.gpus[6].uuid
    kubelet.pods = [pod("trainer-0", "ml", container("main", ("nvidia.com/gpu", [f"{uuid}::3"])))]
    labels = attributed(collect("h100-8x", kubelet))
    assert labels[("6", None)] == POD
    assert sum(1 for value in labels.values() if value) == 1


def test_mig_devices_label_their_gpu_instance_only(kubelet: FakeKubelet) -> None:
    parent = MIXED.gpus[1].uuid
    device = mig_uuid(parent, 3, 0)
    kubelet.pods = [pod("trainer-0", "ml", container("main", ("nvidia.com/mig-2g.20gb", [device])))]
    labels = attributed(collect("a100-4x-mixed-mig", kubelet))
    assert labels[("1", "3")] == POD
    assert [key for key, value in labels.items() if value] == [("1", "3")]


def test_shared_mig_devices_and_old_style_mig_ids(kubelet: FakeKubelet) -> None:
    parent = MIXED.gpus[0].uuid
    kubelet.pods = [
        pod("a", "ns", container("c", ("nvidia.com/mig-1g.10gb", [f"{mig_uuid(parent, 8, 0)}::1"]))),
        pod("b", "ns", container("c", ("nvidia.com/mig-1g.10gb", [f"MIG-{parent}/12/0"]))),
    ]
    labels = attributed(collect("a100-4x-mixed-mig", kubelet))
    assert labels[("0", "8")] == {"pod": "a", "namespace": "ns", "container": "c"}
    assert labels[("0", "12")] == {"pod": "b", "namespace": "ns", "container": "c"}


def test_only_nvidia_resources_count(kubelet: FakeKubelet) -> None:
    kubelet.pods = [
        pod("renamed", "ns", container("c", ("example.com/gpu-a", [H100.gpus[0].uuid]))),
        pod("ignored", "ns", container("c", ("example.com/gpu-b", [H100.gpus[1].uuid]))),
    ]
    labels = attributed(collect("h100-8x", kubelet, resource_names=("example.com/gpu-a",)))
    assert labels[("0", None)] == {"pod": "renamed", "namespace": "ns", "container": "c"}
    assert labels[("1", None)] == {}


def test_virtual_gpus_give_one_series_per_sharing_container(kubelet: FakeKubelet) -> None:
    uuid = H100.gpus[4].uuid
    kubelet.pods = [
        pod("a", "ns", container("c", ("nvidia.com/gpu", [f"{uuid}::0"]))),
        pod("b", "ns", container("c", ("nvidia.com/gpu", [f"{uuid}::1"]))),
    ]
    families = collect("h100-8x", kubelet, virtual_gpus=True)
    samples = [s for s in families["DCGM_FI_DEV_GPU_TEMP"].samples if s.labels["gpu"] == "4"]
    assert sorted((s.labels["pod"], s.labels["vgpu"]) for s in samples) == [("a", "0"), ("b", "1")]
    assert len({s.value for s in samples}) == 1
    assert len(families["DCGM_FI_DEV_GPU_TEMP"].samples) == 9


def test_old_namespace_and_device_name_ids(kubelet: FakeKubelet) -> None:
    kubelet.pods = [pod("trainer-0", "ml", container("main", ("nvidia.com/gpu", ["nvidia3"])))]
    identity = IdentityOptions(HOST, use_old_namespace=True, gpu_id_type=DEVICE_NAME)
    attribution = Attribution(kubernetes=True, labelling=PodLabelling(use_old_namespace=True))
    collector = make_collector(
        "h100-8x", identity=identity, attribution=attribution, pods=PodResourcesClient(kubelet.socket_path)
    )
    families = families_of(collector, cycles=1)
    sample = next(s for s in families["DCGM_FI_DEV_SM_CLOCK"].samples if s.labels["gpu"] == "3")
    assert sample.labels["uuid"] == H100.gpus[3].uuid and "UUID" not in sample.labels
    assert (sample.labels["pod_name"], sample.labels["pod_namespace"], sample.labels["container_name"]) == (
        "trainer-0", "ml", "main")


class _Pods:
    def __init__(self, pods: Mapping[tuple[str, str], PodMetadata]) -> None:
        self._pods = pods

    def pods(self) -> Mapping[tuple[str, str], PodMetadata]:
        return self._pods


def test_pod_uid_and_pod_labels_from_the_api(kubelet: FakeKubelet) -> None:
    kubelet.pods = [pod("trainer-0", "ml", container("main", ("nvidia.com/gpu", [H100.gpus[1].uuid])))]
    labels = {"team": "vision", "gpu": "x", "app.kubernetes.io/name": "t"}
    metadata = {("ml", "trainer-0"): PodMetadata("0b9e-uid", labels)}
    labelling = PodLabelling(pod_uid=True, pod_labels=True, rules=LabelRules.from_patterns(["^team$", "^gpu$"]))
    collector = make_collector(
        "h100-8x",
        attribution=Attribution(kubernetes=True, labelling=labelling),
        pods=PodResourcesClient(kubelet.socket_path),
        pod_metadata=_Pods(metadata),
    )
    body = collector.collect().body.decode()
    line = next(ln for ln in body.splitlines() if ln.startswith("DCGM_FI_DEV_SM_CLOCK{gpu=\"1\""))
    assert (
        ',hostname="gpu-node-1",DCGM_FI_DRIVER_VERSION="570.124.06",pod_gpu="x",team="vision",'
        'container="main",namespace="ml",pod="trainer-0",pod_uid="0b9e-uid"}'
    ) in line


def test_no_kubelet_socket_means_no_pod_labels() -> None:
    collector = make_collector(
        "h100-8x", attribution=Attribution(kubernetes=True), pods=PodResourcesClient("/nonexistent/kubelet.sock")
    )
    snapshot = collector.collect()
    assert snapshot.health.ok
    assert b'pod="' not in snapshot.body


def test_a_failing_kubelet_drops_the_labels_not_the_metrics(caplog: pytest.LogCaptureFixture) -> None:
    directory = Path(tempfile.mkdtemp(prefix="dead-", dir="/tmp"))
    path = directory / "kubelet.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.close()  # a kubelet socket nobody serves (the kubelet is restarting)
    client = PodResourcesClient(str(path), timeout=0.5)
    try:
        collector = make_collector("h100-8x", attribution=Attribution(kubernetes=True), pods=client)
        snapshot = collector.collect()
    finally:
        client.close()
        shutil.rmtree(directory)
    assert snapshot.health.ok and b'pod="' not in snapshot.body and b"DCGM_FI_DEV_GPU_TEMP" in snapshot.body
    assert "no pod labels this cycle" in caplog.text
