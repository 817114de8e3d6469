"""The pods holding the faulty GPUs, from the kubelet's pod-resources answer, for the remediation's partial drain.

The device IDs are the NVIDIA device plugin's: GPU UUIDs for `nvidia.com/gpu` (`<UUID>::<replica>` under
time-slicing: k8s-device-plugin v0.20.0 internal/rm/device_map.go `buildDeviceMap` with replicas, the
`AnnotatedID` form `<id>::<n>`), MIG device UUIDs for `nvidia.com/mig-*`.
"""

from __future__ import annotations

import json

from gpu_operator.agents.health_monitor.holders import HOLDERS_ANNOTATION, gpu_holders, holders_annotation
from gpu_operator.agents.health_monitor.monitor import HealthMonitor
from gpu_operator.agents.kubelet.pod_resources import AllocatedDevices
from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.simulated import SimulatedLibrary, SimulatedPciBus, load_profile
from tests.agents.health_monitor.conftest import NODE, PROFILE, SETTINGS, UUIDS, annotations, node_object
from tests.agents.kube.fake_apiserver import FakeApiServer


def _allocation(pod: str, resource: str, *ids: str, namespace: str = "ml") -> AllocatedDevices:
    return AllocatedDevices(pod, namespace, "main", resource, tuple(ids))


def test_device_plugin_allocations_are_read_back_to_their_gpu() -> None:
    mig = load_profile("a100-8x-mig")
    with LibraryNvml.open(SimulatedLibrary(mig), SimulatedPciBus(mig)) as nvml:
        gpus = nvml.devices()
    parent = next(g for g in gpus if g.mig_devices)
    allocations = [
        _allocation("whole", "nvidia.com/gpu", gpus[1].uuid),
        _allocation("shared-a", "nvidia.com/gpu", f"{gpus[1].uuid}::0"),
        _allocation("slice", "nvidia.com/mig-1g.5gb", parent.mig_devices[0].uuid),
        _allocation("nic", "rdma/ib", "mlx5_0"),
        _allocation("other", "nvidia.com/gpu", "GPU-not-on-this-node"),
    ]
    holders = gpu_holders(allocations, gpus)
    assert holders[gpus[1].uuid] == ["ml/shared-a", "ml/whole"]
    assert holders[parent.uuid] == ["ml/slice"]
    assert "GPU-not-on-this-node" not in holders


def test_the_annotation_names_each_faulty_gpu_even_when_nothing_holds_it() -> None:
    assert holders_annotation({"GPU-1": ["ml/a"]}, []) is None
    assert json.loads(holders_annotation({"GPU-1": ["ml/a"]}, ["GPU-2", "GPU-1"]) or "") == {
        "GPU-1": ["ml/a"], "GPU-2": []}


class Kubelet:
    def __init__(self, *allocations: AllocatedDevices) -> None:
        self.allocations: tuple[AllocatedDevices, ...] | None = allocations

    def list_devices(self) -> tuple[AllocatedDevices, ...] | None:
        return self.allocations


def test_the_monitor_writes_the_holders_of_a_quarantining_fault() -> None:
    library = SimulatedLibrary(PROFILE)
    kubelet = Kubelet(_allocation("train", "nvidia.com/gpu", UUIDS[3]), _allocation("infer", "nvidia.com/gpu",
                                                                                    UUIDS[5]))
    with FakeApiServer() as server:
        server.add(node_object())
        client = server.client()
        monitor = HealthMonitor(SETTINGS, client, lambda: LibraryNvml.open(library, SimulatedPciBus(PROFILE)),
                                lambda nvml: None, pod_resources=kubelet)
        monitor.start_over()
        monitor.health_pass()
        assert HOLDERS_ANNOTATION not in annotations(server)  # no fault: nothing to say
        library.inject("dbe on GPU 3")
        monitor.health_pass()
        assert json.loads(annotations(server)[HOLDERS_ANNOTATION]) == {UUIDS[3]: ["ml/train"]}
        writes = len(server.requests_to("PATCH", f"/api/v1/nodes/{NODE}$"))
        monitor.health_pass()
        assert len(server.requests_to("PATCH", f"/api/v1/nodes/{NODE}$")) == writes  # unchanged: not written again
        kubelet.allocations = None  # the socket went away: what was written stays, nothing is guessed
        monitor.health_pass()
        assert json.loads(annotations(server)[HOLDERS_ANNOTATION]) == {UUIDS[3]: ["ml/train"]}
