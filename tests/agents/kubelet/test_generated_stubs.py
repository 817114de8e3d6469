"""The committed gRPC modules are exactly what grpcio-tools generates from `podresources.proto`.

The modules are regenerated into a temporary tree and compared with the committed ones: the serialized file
descriptor must be identical byte for byte, and the source text identical apart from the lines that name the
generator's own version (which differ between grpcio-tools releases without changing the wire contract).
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from gpu_operator.agents.kubelet import podresources_pb2

grpc_tools = pytest.importorskip("grpc_tools.protoc", reason="grpcio-tools is not installed")

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = Path("gpu_operator/agents/kubelet")
PROTO = PACKAGE / "podresources.proto"
GENERATED = ("podresources_pb2.py", "podresources_pb2_grpc.py")
#: Lines that carry the generator's version rather than anything generated from the .proto file.
_VERSION_LINES = re.compile(
    r"^(# Protobuf Python Version: .*|GRPC_GENERATED_VERSION = .*|_runtime_version\.ValidateProtobufRuntimeVersion\(\n"
    r"(?:    .*\n)*?\))$",
    re.MULTILINE,
)


def _normalised(text: str) -> str:
    return _VERSION_LINES.sub("<version>", text)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("generated")
    (tree / PACKAGE).mkdir(parents=True)
    shutil.copy(ROOT / PROTO, tree / PROTO)
    arguments = ["protoc", f"-I{tree}", f"--python_out={tree}", f"--grpc_python_out={tree}", str(tree / PROTO)]
    assert grpc_tools.main(arguments) == 0, "protoc failed on podresources.proto"
    return tree / PACKAGE


@pytest.mark.parametrize("name", GENERATED)
def test_committed_module_matches_a_fresh_generation(regenerated: Path, name: str) -> None:
    committed = (ROOT / PACKAGE / name).read_text()
    fresh = (regenerated / name).read_text()
    assert _normalised(committed) == _normalised(fresh), (
        f"{PACKAGE / name} is out of date: regenerate it as podresources.proto's header says"
    )


def test_descriptor_is_identical(regenerated: Path) -> None:
    fresh = (regenerated / "podresources_pb2.py").read_text()
    embedded = re.search(r"AddSerializedFile\((b'.*')\)", fresh)
    assert embedded is not None
    assert eval(embedded.group(1)) == podresources_pb2.DESCRIPTOR.serialized_pb


def test_contract_is_the_kubelets() -> None:
    service = podresources_pb2.DESCRIPTOR.services_by_name["PodResourcesLister"]
    assert podresources_pb2.DESCRIPTOR.package == "v1"
    assert service.methods_by_name["List"].full_name == "v1.PodResourcesLister.List"
    numbers = {
        message: {f.name: f.number for f in podresources_pb2.DESCRIPTOR.message_types_by_name[message].fields}
        for message in ("ListPodResourcesResponse", "PodResources", "ContainerResources", "ContainerDevices")
    }
    assert numbers == {
        "ListPodResourcesResponse": {"pod_resources": 1},
        "PodResources": {"name": 1, "namespace": 2, "containers": 3},
        "ContainerResources": {"name": 1, "devices": 2, "cpu_ids": 3, "memory": 4},
        "ContainerDevices": {"resource_name": 1, "device_ids": 2, "topology": 3},
    }
    assert sys.modules["gpu_operator.agents.kubelet.podresources_pb2"] is podresources_pb2
