"""The pod-resources client against a fake kubelet on a real unix-socket gRPC channel."""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

import pytest

from gpu_operator.agents.kubelet import (
    AllocatedDevices,
    PodResourcesClient,
    PodResourcesError,
)
from gpu_operator.agents.kubelet.pod_resources import MAX_RESPONSE_BYTES
from tests.agents.kubelet.fake_kubelet import container, fake_kubelet, pod

GPU_A = "GPU-879bf707-73f0-4d71-a7ec-cf5c106427d9"
GPU_B = "GPU-8cf99590-08ac-440e-8673-9766b19169a2"


def test_list_flattens_pods_containers_and_resources() -> None:
    pods = [
        pod(
            "trainer",
            "ml",
            container("main", ("nvidia.com/gpu", [GPU_A]), ("example.com/nic", ["eth1"])),
            container("sidecar"),
        ),
        pod("shared", "team-b", container("worker", ("nvidia.com/gpu", [f"{GPU_B}::0", f"{GPU_B}::3"]))),
    ]
    with fake_kubelet(pods) as kubelet:
        client = PodResourcesClient(kubelet.socket_path)
        try:
            devices = client.list_devices()
            again = client.list_devices()
        finally:
            client.close()
    assert devices == (
        AllocatedDevices("trainer", "ml", "main", "nvidia.com/gpu", (GPU_A,)),
        AllocatedDevices("trainer", "ml", "main", "example.com/nic", ("eth1",)),
        AllocatedDevices("shared", "team-b", "worker", "nvidia.com/gpu", (f"{GPU_B}::0", f"{GPU_B}::3")),
    )
    assert again == devices
    assert kubelet.calls == 2


def test_an_absent_socket_means_no_kubelet_to_ask(tmp_path: Path) -> None:
    assert PodResourcesClient(str(tmp_path / "kubelet.sock")).list_devices() is None


def test_a_path_that_is_not_a_socket_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "kubelet.sock"
    path.write_text("")
    with pytest.raises(PodResourcesError, match="must be a Unix socket"):
        PodResourcesClient(str(path)).list_devices()


def test_relative_socket_paths_are_refused() -> None:
    with pytest.raises(PodResourcesError, match="must be absolute"):
        PodResourcesClient("pod-resources/kubelet.sock")


def test_a_socket_nobody_serves_raises_pod_resources_error() -> None:
    directory = Path(tempfile.mkdtemp(prefix="dead-", dir="/tmp"))
    path = directory / "kubelet.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.close()  # the socket file stays, nothing listens
    client = PodResourcesClient(str(path), timeout=1.0)
    with pytest.raises(PodResourcesError, match="pod-resources List"):
        client.list_devices()
    client.close()
    path.unlink()
    directory.rmdir()


def test_large_answers_are_accepted() -> None:
    ids = [f"GPU-{n:08d}-0000-0000-0000-000000000000::{r}" for n in range(64) for r in range(80)]
    with fake_kubelet([pod("big", "default", container("c", ("nvidia.com/gpu", ids)))]) as kubelet:
        client = PodResourcesClient(kubelet.socket_path)
        devices = client.list_devices()
        client.close()
    assert devices is not None and len(devices[0].device_ids) == len(ids)
    assert MAX_RESPONSE_BYTES == 16 * 1024 * 1024
