"""The driver check on simulated nodes: host driver, containerized driver, waiting, failures, /dev/char links."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_operator.agents.validator import ValidationFailed
from gpu_operator.agents.validator.driver import driver
from gpu_operator.agents.validator.driver_probe import probe_driver
from tests.agents.kube.fake_apiserver import FakeApiServer
from tests.agents.validator.helpers import NAMESPACE, Node, context, links, node_tree

HOST_READY = (
    "IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\nDRIVER_ROOT_CTR_PATH=/host\n"
    "NVIDIA_DEV_ROOT=/\nDEV_ROOT_CTR_PATH=/host\n"
)
DRIVER_DAEMONSET = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {
        "name": "nvidia-driver-daemonset",
        "namespace": NAMESPACE,
        "labels": {"app": "nvidia-driver-daemonset", "app.kubernetes.io/component": "nvidia-driver"},
    },
}


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return node_tree(tmp_path)


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        yield running


def test_host_driver(node: Node) -> None:
    node.install_host_driver()
    driver(context(node))
    assert (node.status / "driver-ready").read_text() == HOST_READY
    assert links(node.paths.host_dev_char) == {
        "195:0": "/dev/nvidia0",
        "195:254": "/dev/nvidia-modeset",
        "195:255": "/dev/nvidiactl",
        "237:1": "/dev/nvidia-caps/nvidia-cap1",
        "237:12": "/dev/nvidia-caps/nvidia-cap12",
        "237:13": "/dev/nvidia-caps/nvidia-cap13",
        "237:2": "/dev/nvidia-caps/nvidia-cap2",
        "237:21": "/dev/nvidia-caps/nvidia-cap21",
        "237:22": "/dev/nvidia-caps/nvidia-cap22",
        "508:0": "/dev/nvidia-uvm",
        "508:1": "/dev/nvidia-uvm-tools",
    }
    assert node.commands == [] and node.nodes_made == []


def test_host_driver_under_another_host_root_and_an_8_gpu_node(node: Node) -> None:
    node.install_host_driver("usr/sbin/nvidia-smi")
    driver(context(node, nvml="fake:h100-8x", host_root="/sysroot"))
    text = (node.status / "driver-ready").read_text()
    assert "NVIDIA_DRIVER_ROOT=/sysroot\n" in text and "NVIDIA_DEV_ROOT=/sysroot\n" in text
    made = links(node.paths.host_dev_char)
    assert [made[f"195:{minor}"] for minor in range(8)] == [f"/sysroot/dev/nvidia{minor}" for minor in range(8)]
    assert made["237:111"] == "/sysroot/dev/nvidia-caps/nvidia-cap111"


def test_existing_links_are_kept(node: Node) -> None:
    node.install_host_driver()
    Path(node.paths.host_dev_char).mkdir()
    Path(node.paths.host_dev_char, "195:0").symlink_to("/elsewhere")
    driver(context(node))
    assert links(node.paths.host_dev_char)["195:0"] == "/elsewhere"


def test_containerized_driver_waits_for_the_driver_container(node: Node, server: FakeApiServer) -> None:
    server.add(DRIVER_DAEMONSET)
    (node.install_dir / "dev").mkdir()
    node.load_modules("gdrdrv")
    flags = "GDRCOPY_ENABLED: true\nGDS_ENABLED: false\nGPU_DIRECT_RDMA_ENABLED: false\n"

    def sleep(seconds: float) -> None:
        node.sleeps.append(seconds)
        (node.status / ".driver-ctr-ready").write_text(flags)

    driver(context(node, server, sleep=sleep, with_wait=True, driver_install_dir="/run/nvidia/driver"))
    assert node.sleeps == [5.0]
    assert (node.status / "driver-ready").read_text() == (
        "IS_HOST_DRIVER=false\nNVIDIA_DRIVER_ROOT=/run/nvidia/driver\nDRIVER_ROOT_CTR_PATH=/driver-root\n"
        "NVIDIA_DEV_ROOT=/run/nvidia/driver\nDEV_ROOT_CTR_PATH=/driver-root\n"
    )
    assert (node.status / "gdrcopy-ready").exists()
    assert not (node.status / "nvidia-fs-ready").exists()
    made = links(node.paths.host_dev_char)
    assert made["195:0"] == "/run/nvidia/driver/dev/nvidia0" and made["195:255"] == "/run/nvidia/driver/dev/nvidiactl"
    dev = node.install_dir / "dev"
    assert node.nodes_made == [
        (dev / "nvidia-modeset", 195, 254),
        (dev / "nvidiactl", 195, 255),
        (dev / "nvidia-uvm", 508, 0),
        (dev / "nvidia-uvm-tools", 508, 1),
    ]
    selector = server.requests_to("GET", f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets$")[0].query["labelSelector"]
    assert selector == "app.kubernetes.io/component=nvidia-driver"


def test_containerized_driver_without_a_driver_daemonset_does_not_wait(node: Node, server: FakeApiServer) -> None:
    driver(context(node, server))
    assert node.sleeps == []
    assert (node.status / "driver-ready").read_text() == (
        "IS_HOST_DRIVER=false\nNVIDIA_DRIVER_ROOT=/run/nvidia/driver\nDRIVER_ROOT_CTR_PATH=/driver-root\n"
        "NVIDIA_DEV_ROOT=/\nDEV_ROOT_CTR_PATH=/host\n"
    )
    assert links(node.paths.host_dev_char)["195:0"] == "/dev/nvidia0"
    assert node.nodes_made == []


def test_a_driver_that_does_not_start_fails_without_wait(node: Node, server: FakeApiServer, tmp_path: Path) -> None:
    profile = tmp_path / "broken.yaml"
    profile.write_text("extends: t4-1x\nfaults: {init: DRIVER_NOT_LOADED}\n")
    ctx = context(node, server, nvml=f"fake:{profile}")
    (node.status / "driver-ready").write_text("stale")
    with pytest.raises(ValidationFailed, match="NVML cannot start"):
        driver(ctx)
    assert not (node.status / "driver-ready").exists()
    assert node.sleeps == []


def test_with_wait_retries_until_the_driver_answers(node: Node, server: FakeApiServer, tmp_path: Path) -> None:
    profile = tmp_path / "coming-up.yaml"
    profile.write_text("extends: t4-1x\nfaults: {init: DRIVER_NOT_LOADED}\n")

    def sleep(seconds: float) -> None:
        node.sleeps.append(seconds)
        if len(node.sleeps) == 3:
            profile.write_text("extends: t4-1x\n")

    driver(context(node, server, sleep=sleep, with_wait=True, sleep_interval_seconds=2, nvml=f"fake:{profile}"))
    assert node.sleeps == [2.0, 2.0, 2.0]
    assert (node.status / "driver-ready").exists()


def test_a_lost_gpu_fails_the_driver(node: Node, tmp_path: Path) -> None:
    profile = tmp_path / "lost.yaml"
    profile.write_text("extends: h100-8x\nfaults: {lostGpus: [3]}\n")
    with pytest.raises(ValidationFailed, match="GPU 3 fell off the bus"):
        probe_driver(f"fake:{profile}", None)


def test_wsl_uses_the_windows_driver_without_links(node: Node) -> None:
    node.install_host_driver("usr/lib/wsl/lib/nvidia-smi")
    driver(context(node, nvml="fake:/nonexistent-profile"))
    assert (node.status / "driver-ready").read_text() == HOST_READY
    assert links(node.paths.host_dev_char) == {}


def test_symlink_creation_can_be_disabled(node: Node) -> None:
    node.install_host_driver()
    driver(context(node, disable_dev_char_symlink_creation=True))
    assert links(node.paths.host_dev_char) == {}
    assert (node.status / "driver-ready").exists()


def test_missing_device_majors_fail_with_the_issue_hint(node: Node) -> None:
    node.install_host_driver()
    Path(node.paths.proc, "devices").write_text("Character devices:\n  1 mem\n")
    with pytest.raises(ValidationFailed) as failure:
        driver(context(node))
    assert "no NVIDIA devices in" in str(failure.value)
    assert "DISABLE_DEV_CHAR_SYMLINK_CREATION" in str(failure.value)
    assert not (node.status / "driver-ready").exists()


def test_kernel_modules_are_loaded_when_the_driver_is_not(node: Node) -> None:
    node.install_host_driver()
    Path(node.paths.sys, "module", "nvidia", "refcnt").unlink()
    driver(context(node))
    host = node.paths.host_root
    assert node.commands == [
        ["chroot", host, "/sbin/modprobe", "nvidia"],
        ["chroot", host, "/sbin/modprobe", "nvidia-uvm"],
        ["chroot", host, "/sbin/modprobe", "nvidia-modeset"],
    ]


def test_non_executable_or_empty_nvidia_smi_is_not_a_host_driver(node: Node, server: FakeApiServer) -> None:
    smi = Path(node.paths.host_root, "usr", "bin", "nvidia-smi")
    smi.parent.mkdir(parents=True)
    smi.write_text("")
    smi.chmod(0o755)
    other = Path(node.paths.host_root, "bin", "nvidia-smi")
    other.parent.mkdir(parents=True)
    other.write_text("binary")
    other.chmod(0o644)
    driver(context(node, server))
    assert (node.status / "driver-ready").read_text().startswith("IS_HOST_DRIVER=false\n")


def test_real_nvml_needs_the_library_under_the_driver_root(tmp_path: Path) -> None:
    with pytest.raises(ValidationFailed, match=r"libnvidia-ml\.so\.1 not found under"):
        probe_driver("auto", str(tmp_path))
    library = tmp_path / "usr" / "lib64" / "libnvidia-ml.so.1"
    library.parent.mkdir(parents=True)
    library.write_text("not a shared object")
    with pytest.raises(ValidationFailed, match="cannot load"):
        probe_driver("auto", str(tmp_path), initialise_gpus=False)
