"""The committed gRPC modules are what grpcio-tools makes of `deviceplugin.proto`; the contract is the kubelet's."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gpu_operator.agents.device_plugin import deviceplugin_pb2 as pb

grpc_tools = pytest.importorskip("grpc_tools.protoc", reason="grpcio-tools is not installed")

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = Path("gpu_operator/agents/device_plugin")
PROTO = PACKAGE / "deviceplugin.proto"
_VERSION_LINES = re.compile(
    r"^(# Protobuf Python Version: .*|GRPC_GENERATED_VERSION = .*|_runtime_version\.ValidateProtobufRuntimeVersion\(\n"
    r"(?:    .*\n)*?\))$",
    re.MULTILINE,
)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("generated")
    (tree / PACKAGE).mkdir(parents=True)
    shutil.copy(ROOT / PROTO, tree / PROTO)
    arguments = ["protoc", f"-I{tree}", f"--python_out={tree}", f"--grpc_python_out={tree}", str(tree / PROTO)]
    assert grpc_tools.main(arguments) == 0, "protoc failed on deviceplugin.proto"
    return tree / PACKAGE


@pytest.mark.parametrize("name", ["deviceplugin_pb2.py", "deviceplugin_pb2_grpc.py"])
def test_committed_module_matches_a_fresh_generation(regenerated: Path, name: str) -> None:
    committed = _VERSION_LINES.sub("<version>", (ROOT / PACKAGE / name).read_text())
    fresh = _VERSION_LINES.sub("<version>", (regenerated / name).read_text())
    assert committed == fresh, f"{PACKAGE / name} is out of date: regenerate it as deviceplugin.proto's header says"


def test_methods_are_the_kubelets() -> None:
    assert pb.DESCRIPTOR.package == "v1beta1"
    methods = {m.full_name for s in pb.DESCRIPTOR.services_by_name.values() for m in s.methods}
    assert methods == {
        "v1beta1.Registration.Register",
        "v1beta1.DevicePlugin.GetDevicePluginOptions",
        "v1beta1.DevicePlugin.ListAndWatch",
        "v1beta1.DevicePlugin.GetPreferredAllocation",
        "v1beta1.DevicePlugin.Allocate",
        "v1beta1.DevicePlugin.PreStartContainer",
    }
    assert pb.DESCRIPTOR.services_by_name["DevicePlugin"].methods_by_name["ListAndWatch"].server_streaming


def test_field_numbers_are_the_kubelets() -> None:
    expected = {
        "DevicePluginOptions": {"pre_start_required": 1, "get_preferred_allocation_available": 2},
        "RegisterRequest": {"version": 1, "endpoint": 2, "resource_name": 3, "options": 4},
        "ListAndWatchResponse": {"devices": 1},
        "Device": {"ID": 1, "health": 2, "topology": 3},
        "TopologyInfo": {"nodes": 1},
        "NUMANode": {"ID": 1},
        "PreferredAllocationRequest": {"container_requests": 1},
        "ContainerPreferredAllocationRequest": {"available_deviceIDs": 1, "must_include_deviceIDs": 2,
                                                "allocation_size": 3},
        "PreferredAllocationResponse": {"container_responses": 1},
        "ContainerPreferredAllocationResponse": {"deviceIDs": 1},
        "AllocateRequest": {"container_requests": 1},
        "ContainerAllocateRequest": {"devices_ids": 1},
        "AllocateResponse": {"container_responses": 1},
        "ContainerAllocateResponse": {"envs": 1, "mounts": 2, "devices": 3, "annotations": 4, "cdi_devices": 5},
        "Mount": {"container_path": 1, "host_path": 2, "read_only": 3},
        "DeviceSpec": {"container_path": 1, "host_path": 2, "permissions": 3},
        "CDIDevice": {"name": 1},
        "PreStartContainerRequest": {"devices_ids": 1},
    }
    actual = {name: {f.name: f.number for f in pb.DESCRIPTOR.message_types_by_name[name].fields} for name in expected}
    assert actual == expected
