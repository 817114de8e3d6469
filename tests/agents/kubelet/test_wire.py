"""The protobuf wire reader against protobuf itself: messages the generated classes serialize, read back.

Upstream: dcgm-exporter reads the same answer with the generated Go types (`internal/pkg/transformation/
kubernetes.go`, `PodMapper.listPods`, then `toDeviceToPod` iterating pod -> container -> devices); the order and
grouping asserted here are that iteration's.
"""

from __future__ import annotations

import pytest

from gpu_operator.agents.kubelet import podresources_pb2 as pb
from gpu_operator.agents.kubelet.wire import WireError, fields, pod_resources

GPU = "GPU-879bf707-73f0-4d71-a7ec-cf5c106427d9"


def _expected(response: pb.ListPodResourcesResponse) -> tuple[tuple[str, str, str, str, tuple[str, ...]], ...]:
    return tuple(
        (p.name, p.namespace, c.name, d.resource_name, tuple(d.device_ids))
        for p in response.pod_resources
        for c in p.containers
        for d in c.devices
    )


def _response() -> pb.ListPodResourcesResponse:
    numa = pb.TopologyInfo(nodes=[pb.NUMANode(ID=1), pb.NUMANode(ID=0)])
    return pb.ListPodResourcesResponse(pod_resources=[
        pb.PodResources(name="trainer", namespace="ml", containers=[
            pb.ContainerResources(
                name="main",
                devices=[
                    pb.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=[GPU], topology=numa),
                    pb.ContainerDevices(resource_name="rdma/ib", device_ids=["mlx5_0", "mlx5_1"]),
                ],
                cpu_ids=[0, 1, 2, 3, 127],
                memory=[pb.ContainerMemory(memory_type="hugepages-2Mi", size=1 << 31, topology=numa)],
            ),
            pb.ContainerResources(name="sidecar", cpu_ids=[5]),
        ]),
        pb.PodResources(name="shared-é", namespace="team-b", containers=[
            pb.ContainerResources(name="w", devices=[
                pb.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=[f"{GPU}::0", f"{GPU}::3"]),
                pb.ContainerDevices(resource_name="nvidia.com/mig-1g.10gb", device_ids=[]),
            ]),
        ]),
        pb.PodResources(name="no-containers", namespace="default"),
    ])


def test_reads_what_protobuf_writes_skipping_cpu_memory_and_topology() -> None:
    response = _response()
    assert pod_resources(response.SerializeToString()) == _expected(response)
    assert pod_resources(b"") == ()


def test_unknown_fields_of_every_wire_type_are_skipped() -> None:
    """A newer kubelet adds fields (dynamic_resources = 5 on ContainerResources, ...); they must not matter."""
    container = pb.ContainerResources(name="c", devices=[pb.ContainerDevices(resource_name="r", device_ids=["d"])])
    extra = (
        bytes([5 << 3 | 2, 3]) + b"xyz"          # length-delimited field 5
        + bytes([6 << 3 | 0, 0x96, 0x01])        # varint field 6
        + bytes([7 << 3 | 1]) + b"\x00" * 8      # fixed64 field 7
        + bytes([8 << 3 | 5]) + b"\x00" * 4      # fixed32 field 8
    )
    body = container.SerializeToString() + extra
    pod = bytes([3 << 3 | 2, len(body)]) + body + pb.PodResources(name="p", namespace="n").SerializeToString()
    message = bytes([1 << 3 | 2, len(pod)]) + pod
    assert pod_resources(message) == (("p", "n", "c", "r", ("d",)),)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (_response().SerializeToString()[:-3], "past the end"),
        (bytes([1 << 3 | 2, 0x80]), "varint runs past"),
        (bytes([1 << 3 | 3]), "wire type 3"),
        (bytes([1 << 3 | 0, 1]), "message field 1 has wire type 0"),
        (bytes([0]), "field number 0"),
        (bytes([1 << 3 | 2, 4, 1 << 3 | 2, 2, 0xC3, 0x28]), "not UTF-8"),
    ],
)
def test_malformed_answers_raise_wire_error(data: bytes, problem: str) -> None:
    with pytest.raises(WireError, match=problem):
        pod_resources(data)


def test_fields_yields_numbers_types_and_values() -> None:
    data = pb.ContainerResources(name="c", cpu_ids=[300]).SerializeToString()
    found = [(n, k, v if isinstance(v, int) else bytes(v)) for n, k, v in fields(data)]
    assert found == [(1, 2, b"c"), (3, 2, b"\xac\x02")]
