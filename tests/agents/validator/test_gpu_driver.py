"""The driver and toolkit checks against the real driver (`pytest -m gpu` on a machine with a GPU).

They skip only on a machine that shows no NVIDIA GPU (`tests/agents/gpu_gate.py`); where one shows, a driver our
probe cannot start is a failure. Expected values come from pynvml called directly.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pynvml
import pytest

from gpu_operator.agents.validator.dev_char import KERNEL_MODULES
from gpu_operator.agents.validator.driver import driver
from gpu_operator.agents.validator.driver_probe import DriverProbe, probe_driver
from gpu_operator.agents.validator.driver_root import find_host_nvidia_smi
from gpu_operator.agents.validator.paths import Paths
from tests.agents.validator.helpers import Node, context, links

pytestmark = pytest.mark.gpu


#: The common places of a host-installed driver's nvidia-smi, which NVIDIA's validator tries: whether the host
#: check can run here is decided from these, without asking the code under test.
HOST_NVIDIA_SMI_DIRS = ("/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/lib/wsl/lib", "/opt/bin")


@pytest.fixture(scope="module")
def real() -> DriverProbe:
    return probe_driver("auto", None)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def test_probe_matches_nvml(real: DriverProbe) -> None:
    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
        minors = tuple(pynvml.nvmlDeviceGetMinorNumber(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count))
        assert real.driver_version == _text(pynvml.nvmlSystemGetDriverVersion())
    finally:
        pynvml.nvmlShutdown()
    assert real.gpu_minors == minors


#: Where the kernel shows a loaded nvidia module; NVIDIA's validator skips modprobe when it exists.
NVIDIA_MODULE_REFCNT = Path("/sys/module/nvidia/refcnt")


def expected_modprobes(refcnt: Path) -> list[list[str]]:
    """The module loads the host-driver check asks for, decided from the machine's own evidence (not our code).

    NVIDIA's validator (gpu-operator `cmd/nvidia-validator/main.go`, `isNvidiaModuleLoaded` and
    `createDevCharSymlinks`) loads the kernel modules only when `/sys/module/nvidia/refcnt` cannot be read; a
    working driver does not imply that file (nor a `nvidia` line in /proc/modules) is visible - a container's own
    sysfs, or a kernel with the driver built in, show neither. Where it is missing the loads are asked for (and
    recorded by the test's node, never run), with the host root "/" needing no chroot.
    """
    try:
        refcnt.read_text()
    except OSError:
        return [["/sbin/modprobe", module] for module in KERNEL_MODULES]
    return []


def test_modprobes_follow_the_refcnt_file(tmp_path: Path) -> None:
    """Both kinds of host: the module visible in sysfs, and not (the case that failed on a lent H100)."""
    refcnt = tmp_path / "refcnt"
    assert expected_modprobes(refcnt) == [["/sbin/modprobe", m] for m in ("nvidia", "nvidia-uvm", "nvidia-modeset")]
    refcnt.write_text("4\n")
    assert expected_modprobes(refcnt) == []


def test_driver_check_on_the_host_driver(real: DriverProbe, tmp_path: Path) -> None:
    if not any(shutil.which("nvidia-smi", path=directory) for directory in HOST_NVIDIA_SMI_DIRS):
        pytest.skip(f"nvidia-smi is not installed in any of {', '.join(HOST_NVIDIA_SMI_DIRS)}")
    assert find_host_nvidia_smi("/") is not None
    node = Node(tmp_path, Paths(host_root="/", host_dev_char=str(tmp_path / "dev-char")))
    driver(context(node, nvml="auto"))
    assert (node.status / "driver-ready").read_text().startswith("IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\n")
    made = links(node.paths.host_dev_char)
    assert real.gpu_minors is not None
    for minor in real.gpu_minors:
        major = os.major(Path(f"/dev/nvidia{minor}").stat().st_rdev)
        assert made[f"{major}:{minor}"] == f"/dev/nvidia{minor}"
    assert node.commands == expected_modprobes(NVIDIA_MODULE_REFCNT)
