"""Reading and changing the host under a root directory, with a fake command runner."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from gpu_operator.agents.driver_manager.host import HostActions, HostError, HostProbe, driver_mounts, loaded_modules

MODULES = """nvidia_uvm 1540096 0 - Live 0x0000000000000000
nvidia_modeset 1306624 0 - Live 0x0000000000000000
nvidia 56799232 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)
mlx5_core 2068480 1 mlx5_ib, Live 0x0000000000000000
"""
MOUNTINFO = """22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
610 22 0:77 / /run/nvidia/driver rw,relatime shared:300 - overlay overlay rw
611 610 0:5 / /run/nvidia/driver/dev rw,nosuid shared:2 - devtmpfs udev rw
612 22 0:78 / /run/nvidia/driver-other rw - tmpfs tmpfs rw
613 610 0:79 / /run/nvidia/driver/with\\040space rw - tmpfs tmpfs rw
"""


class Runner:
    def __init__(self, answers: dict[str, tuple[int, str]] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[list[str]] = []

    def __call__(self, command: Sequence[str]) -> tuple[int, str]:
        self.calls.append(list(command))
        return self.answers.get(command[0], (0, ""))


def host_root(tmp: Path) -> Path:
    for directory in ("proc/self", "run/nvidia", "run/mellanox/drivers", "sys/bus/pci/devices/0000:3b:00.0",
                      "sys/bus/pci/devices/0000:5e:00.0", "sys/bus/pci/drivers/vfio-pci/0000:3b:00.0", "host"):
        (tmp / directory).mkdir(parents=True, exist_ok=True)
    (tmp / "proc/modules").write_text(MODULES)
    (tmp / "proc/self/mountinfo").write_text(MOUNTINFO)
    (tmp / "sys/bus/pci/devices/0000:3b:00.0/vendor").write_text("0x10de\n")
    (tmp / "sys/bus/pci/devices/0000:5e:00.0/vendor").write_text("0x15b3\n")
    (tmp / "run/nvidia/nvidia-driver.state").write_text("abc123\n")
    (tmp / "run/nvidia/nvidia-driver.pid").write_text("42\n")
    return tmp


def test_module_and_mount_parsing() -> None:
    assert loaded_modules(MODULES) == {"nvidia_uvm", "nvidia_modeset", "nvidia", "mlx5_core"}
    assert driver_mounts(MOUNTINFO) == (
        "/run/nvidia/driver/with space", "/run/nvidia/driver/dev", "/run/nvidia/driver")  # deepest, then latest


def test_the_probe_reads_everything_under_its_root(tmp_path: Path) -> None:
    root = host_root(tmp_path)
    runner = Runner({"chroot": (1, "chroot: failed to run command 'nvidia-smi': No such file or directory")})
    facts = HostProbe(root, runner).observe()
    assert facts.host_driver == "" and facts.driver_loaded
    assert facts.loaded_digest == "abc123" and facts.pid_file
    assert facts.driver_mounts[-1] == "/run/nvidia/driver"
    assert facts.vfio_bound == ("0000:3b:00.0",)
    assert facts.mellanox and not facts.mofed_ready
    assert runner.calls == [["chroot", str(root / "host"), "nvidia-smi", "--query-gpu=driver_version",
                             "--format=csv,noheader"]]
    (root / "run/mellanox/drivers/.driver-ready").touch()
    assert HostProbe(root, runner).observe().mofed_ready
    assert HostProbe(root, Runner(), use_host_mofed=True).observe().mofed_ready  # mlx5_core is loaded


def test_a_host_driver_is_asked_once(tmp_path: Path) -> None:
    runner = Runner({"chroot": (0, "580.95.05\n580.95.05\n")})
    probe = HostProbe(host_root(tmp_path), runner)
    assert probe.observe().host_driver == "580.95.05"
    assert probe.observe().host_driver == "580.95.05"
    assert len(runner.calls) == 1


def test_missing_optional_files_read_as_absent_but_proc_modules_is_required(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/modules").write_text("")
    facts = HostProbe(tmp_path, Runner({"chroot": (127, "")})).observe()
    assert (facts.modules, facts.loaded_digest, facts.driver_mounts, facts.pid_file, facts.vfio_bound) == (
        frozenset(), "", (), False, ())
    (tmp_path / "proc/modules").unlink()
    with pytest.raises(HostError, match="proc/modules"):
        HostProbe(tmp_path, Runner()).observe()


def test_actions_run_commands_and_touch_files_under_the_root(tmp_path: Path) -> None:
    root = host_root(tmp_path)
    runner = Runner({"rmmod": (1, "rmmod: ERROR: Module nvidia is in use")})
    actions = HostActions(root, runner)
    assert "exited 1: rmmod: ERROR: Module nvidia is in use" in actions.unload_module("nvidia")
    assert actions.unmount("/run/nvidia/driver") == ""
    assert runner.calls[-1] == ["umount", "--lazy", "/run/nvidia/driver"]
    assert actions.remove_file("/run/nvidia/nvidia-driver.pid") == ""
    assert not (root / "run/nvidia/nvidia-driver.pid").exists()
    assert actions.remove_file("/run/nvidia/nvidia-driver.pid") == ""
    assert actions.unbind_vfio(["0000:3b:00.0"]) == ""
    assert (root / "sys/bus/pci/drivers/vfio-pci/unbind").read_text() == "0000:3b:00.0"
    assert "0000:aa:00.0" in HostActions(tmp_path / "nowhere", runner).unbind_vfio(["0000:aa:00.0"])
