"""The toolkit check (NVML through the runtime's library) and the kernel module checks (GPUDirect, MOFED)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_operator.agents.validator import ValidationFailed
from gpu_operator.agents.validator.gpudirect import (
    gdrcopy,
    mofed,
    nvidia_fs,
    nvidia_peermem,
)
from gpu_operator.agents.validator.kernel_modules import loaded_modules
from gpu_operator.agents.validator.toolkit import toolkit
from tests.agents.kube.fake_apiserver import FakeApiServer
from tests.agents.validator.helpers import NODE, Node, context, node_tree


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return node_tree(tmp_path)


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        yield running


def test_toolkit(node: Node) -> None:
    toolkit(context(node, nvml="fake:a100-8x-mig"))
    assert (node.status / "toolkit-ready").read_text() == ""


def test_toolkit_without_gpus_fails_once_without_wait(node: Node, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("extends: t4-1x\nfaults: {init: NO_PERMISSION}\n")
    with pytest.raises(ValidationFailed, match="NVML cannot start"):
        toolkit(context(node, nvml=f"fake:{broken}"))
    assert node.sleeps == [] and not (node.status / "toolkit-ready").exists()


def test_loaded_modules_reads_proc_modules() -> None:
    text = "nvidia_fs 245760 0 - Live 0xffffffffc0a00000 (OE)\ngdrdrv 24576 0 - Live 0x0 (OE)\n\n"
    assert loaded_modules(text) == {"nvidia_fs", "gdrdrv"}


@pytest.mark.parametrize(
    ("check", "module", "status_file"),
    [
        (nvidia_fs, "nvidia_fs", "nvidia-fs-ready"),
        (gdrcopy, "gdrdrv", "gdrcopy-ready"),
        (nvidia_peermem, "nvidia_peermem", "nvidia-peermem-ready"),
    ],
)
def test_module_checks(node: Node, check, module: str, status_file: str) -> None:
    with pytest.raises(ValidationFailed, match=f"kernel module {module} is not loaded"):
        check(context(node))
    node.load_modules(module)
    check(context(node))
    assert (node.status / status_file).exists()


def test_module_check_with_wait(node: Node) -> None:
    def sleep(seconds: float) -> None:
        node.sleeps.append(seconds)
        node.load_modules("nvidia_peermem")

    nvidia_peermem(context(node, sleep=sleep, with_wait=True))
    assert node.sleeps == [5.0] and (node.status / "nvidia-peermem-ready").exists()


def _mellanox_node(server: FakeApiServer, present: str) -> None:
    labels = {"feature.node.kubernetes.io/pci-15b3.present": present}
    server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": labels}})


def test_mofed_is_skipped_without_gpudirect_rdma(node: Node) -> None:
    mofed(context(node))
    assert not (node.status / "mofed-ready").exists()


def test_mofed_is_skipped_without_a_mellanox_nic(node: Node, server: FakeApiServer) -> None:
    _mellanox_node(server, "false")
    mofed(context(node, server, gpu_direct_rdma_enabled="true"))
    assert not (node.status / "mofed-ready").exists()


def test_mofed_from_the_network_operators_driver_container(node: Node, server: FakeApiServer) -> None:
    _mellanox_node(server, "true")
    with pytest.raises(ValidationFailed, match=r"\.driver-ready does not exist"):
        mofed(context(node, server, gpu_direct_rdma_enabled="true"))
    Path(node.paths.mellanox_driver_ready).parent.mkdir(parents=True)
    Path(node.paths.mellanox_driver_ready).write_text("")
    mofed(context(node, server, gpu_direct_rdma_enabled="true"))
    assert (node.status / "mofed-ready").exists()


def test_mofed_on_the_host(node: Node, server: FakeApiServer) -> None:
    _mellanox_node(server, "true")
    with pytest.raises(ValidationFailed, match="mlx5_core is not loaded"):
        mofed(context(node, server, gpu_direct_rdma_enabled="true", use_host_mofed="true"))
    node.load_modules("mlx5_core")
    mofed(context(node, server, gpu_direct_rdma_enabled="true", use_host_mofed="true"))
    assert (node.status / "mofed-ready").exists()


def test_mofed_needs_the_node_name(node: Node) -> None:
    with pytest.raises(ValidationFailed, match="node-name"):
        mofed(context(node, gpu_direct_rdma_enabled="true", node_name=""))
