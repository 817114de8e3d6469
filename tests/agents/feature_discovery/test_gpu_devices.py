"""The GpuDevice inventory: one object per GPU, reconciled (create, replace, delete stale) per pass."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from gpu_operator.agents.feature_discovery.gpu_devices import (
    GpuDevicePublisher,
    gpu_device_name,
    gpu_device_object,
    gpu_device_objects,
)
from gpu_operator.agents.nvml import GpuInfo, Nvml, open_nvml
from tests.agents.kube.fake_apiserver import FakeApiServer

NODE = "aks-gpu-12345678-vmss000000"


def inventory(profile: str) -> tuple[Nvml, tuple[GpuInfo, ...]]:
    nvml = open_nvml(f"fake:{profile}")
    return nvml, nvml.devices()


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        running.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "uid": "node-uid"}})
        yield running


def test_t4_object() -> None:
    nvml, (gpu,) = inventory("t4-1x")
    owner = {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": "node-uid"}
    assert gpu_device_object(NODE, nvml.system(), gpu, [owner]) == {
        "apiVersion": "gpu.pulumi-gpu-operator.io/v1alpha1",
        "kind": "GpuDevice",
        "metadata": {
            "name": f"{NODE}-gpu-d3615794-4e42-4b5f-9960-d8fc0896b3bd",
            "labels": {"gpu.pulumi-gpu-operator.io/node": NODE},
            "ownerReferences": [owner],
        },
        "spec": {
            "nodeName": NODE,
            "index": 0,
            "uuid": "GPU-d3615794-4e42-4b5f-9960-d8fc0896b3bd",
            "product": "Tesla T4",
            "pciBusId": "00000001:00:00.0",
            "memoryMiB": 15360,
            "computeCapability": "7.5",
        },
        "status": {
            "driverVersion": "535.247.01",
            "cudaDriverVersion": "12.2",
            "lost": False,
            "mig": {"mode": "unsupported"},
        },
    }


def test_mig_devices_are_listed() -> None:
    nvml, gpus = inventory("a100-4x-mixed-mig")
    objects = gpu_device_objects(NODE, nvml.system(), gpus)
    balanced, disabled = objects[1]["status"]["mig"], objects[2]["status"]["mig"]
    assert balanced["mode"] == balanced["pendingMode"] == "enabled"
    assert [d["profile"] for d in balanced["devices"]] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    assert [d["gpuInstanceId"] for d in balanced["devices"]] == [2, 3, 9, 10]
    assert all(d["uuid"].startswith("MIG-") and d["memoryMiB"] > 0 for d in balanced["devices"])
    assert disabled == {"mode": "disabled", "pendingMode": "disabled", "devices": []}


def test_names_are_dns_safe_and_bounded() -> None:
    _, (gpu,) = inventory("t4-1x")
    assert gpu_device_name("Node-A", gpu) == "node-a-gpu-d3615794-4e42-4b5f-9960-d8fc0896b3bd"
    assert gpu_device_name("n", dataclasses.replace(gpu, uuid=None)) == "n-gpu0"
    long_node = "a" * 240 + ".example.com"
    name = gpu_device_name(long_node, gpu)
    assert len(name) <= 253 and name.endswith("-gpu-d3615794-4e42-4b5f-9960-d8fc0896b3bd")
    assert (
        "gpu.pulumi-gpu-operator.io/node"
        not in gpu_device_object(long_node, inventory("t4-1x")[0].system(), gpu)["metadata"]["labels"]
    )


def test_publisher_reconciles_the_nodes_objects(server: FakeApiServer) -> None:
    nvml, gpus = inventory("h100-8x")
    stale = gpu_device_object(
        NODE, nvml.system(), dataclasses.replace(gpus[0], uuid="GPU-00000000-0000-0000-0000-000000000099")
    )
    server.add(stale)
    server.add(
        {
            **gpu_device_object("other-node", nvml.system(), gpus[0]),
            "metadata": {"name": "other-node-gpu-x", "labels": {"gpu.pulumi-gpu-operator.io/node": "other-node"}},
        }
    )
    publisher = GpuDevicePublisher(server.client(), NODE)
    publisher.publish(nvml.system(), gpus)
    mine = server.objects("gpudevices")
    assert len(mine) == 9 and {o["spec"]["nodeName"] for o in mine} == {NODE, "other-node"}
    assert stale["metadata"]["name"] not in {o["metadata"]["name"] for o in mine}
    assert all(
        o["metadata"].get("ownerReferences") == [{"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": "node-uid"}]
        for o in mine
        if o["spec"]["nodeName"] == NODE
    )
    assert sorted(r.method for r in server.requests if r.method != "GET") == ["DELETE"] + ["POST"] * 8

    before = len(server.requests)
    publisher.publish(nvml.system(), gpus)
    assert [r.method for r in server.requests[before:]] == ["GET"]

    lost = (dataclasses.replace(gpus[0], lost=True), *gpus[1:])
    publisher.publish(nvml.system(), lost)
    assert [r.method for r in server.requests[before + 1 :]] == ["GET", "PUT"]
    assert server.get("gpudevices", gpu_device_name(NODE, gpus[0]))["status"]["lost"] is True  # type: ignore[index]
