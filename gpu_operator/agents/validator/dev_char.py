"""`/dev/char` symlinks for the NVIDIA character devices, as NVIDIA's validator creates them.

systemd's cgroup driver resolves a container's device rules through `/dev/char/<major>:<minor>`; the NVIDIA
device nodes are created outside udev, so those links are missing and GPU containers can lose access to their
devices when systemd reloads (NVIDIA/gpu-operator#430). After validating the driver, the validator links every
possible NVIDIA device (not only the existing ones) into the host's `/dev/char`:

* the control devices `nvidia-modeset` (minor 254) and `nvidiactl` (255) of the `nvidia` major, `nvidia-uvm` (0)
  and `nvidia-uvm-tools` (1) of the `nvidia-uvm` major;
* one `nvidia<minor>` per GPU;
* the MIG capability devices `/dev/nvidia-caps/nvidia-cap<N>` (`config`, `monitor`, and each GPU's GPU- and
  compute-instance `access` capabilities), numbered by `/proc/driver/nvidia-caps/mig-minors`.

Majors come from `/proc/devices` (`nvidia`, called `nvidia-frontend` before driver 550.40). Link targets are host
paths under the dev root. An existing link is left alone. Before linking, the kernel modules are loaded when the
`nvidia` module is not (with `modprobe` chrooted into the driver root), and missing control device nodes are
created in a containerized driver's own `/dev`. `DISABLE_DEV_CHAR_SYMLINK_CREATION=true` skips all of this.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gpu_operator.agents.nvml.pci import SysfsPciBus
from gpu_operator.agents.validator.driver_root import DriverInfo
from gpu_operator.agents.validator.errors import ValidationFailed

__all__ = [
    "CAPS_MAJOR",
    "GPU_MAJOR",
    "ISSUE_HINT",
    "KERNEL_MODULES",
    "UVM_MAJOR",
    "DevCharSetup",
    "DeviceNode",
    "parse_device_majors",
    "parse_mig_minors",
    "possible_device_nodes",
]

_log = logging.getLogger(__name__)

GPU_MAJOR = "nvidia"
_GPU_MAJOR_OLD = "nvidia-frontend"
UVM_MAJOR = "nvidia-uvm"
CAPS_MAJOR = "nvidia-caps"
#: Modules loaded (in this order) when the nvidia module is not loaded yet.
KERNEL_MODULES = ("nvidia", "nvidia-uvm", "nvidia-modeset")
#: Control devices: path, major name, minor.
CONTROL_DEVICES: tuple[tuple[str, str, int], ...] = (
    ("/dev/nvidia-modeset", GPU_MAJOR, 254),
    ("/dev/nvidiactl", GPU_MAJOR, 255),
    ("/dev/nvidia-uvm", UVM_MAJOR, 0),
    ("/dev/nvidia-uvm-tools", UVM_MAJOR, 1),
)
_MIG_CONTROL = ("config", "monitor")
_CAP = re.compile(r"gpu(\d+)/gi(\d+)(?:/ci(\d+))?/access")

ISSUE_HINT = (
    "Failed to create symlinks under /dev/char that point to all possible NVIDIA character devices.\n"
    "The existence of these symlinks is required to address the following bug:\n\n"
    "    https://github.com/NVIDIA/gpu-operator/issues/430\n\n"
    "This bug impacts container runtimes configured with systemd cgroup management enabled.\n"
    "To disable the symlink creation, set the following envvar in ClusterPolicy:\n\n"
    "    validator:\n      driver:\n        env:\n        - name: DISABLE_DEV_CHAR_SYMLINK_CREATION\n"
    '          value: "true"'
)


@dataclass(frozen=True, slots=True)
class DeviceNode:
    """A device node (host path) and its numbers; its `/dev/char` link is named `<major>:<minor>`."""

    path: str
    major: int
    minor: int

    @property
    def link_name(self) -> str:
        return f"{self.major}:{self.minor}"


def parse_device_majors(text: str) -> dict[str, int]:
    """NVIDIA character device majors from `/proc/devices` (name -> major), the old GPU name mapped to the new."""
    majors: dict[str, int] = {}
    section = ""
    for line in text.splitlines():
        if line.strip().endswith(":"):
            section = line.strip()
            continue
        fields = line.split()
        if (
            section.startswith("Character")
            and len(fields) == 2
            and fields[0].isdigit()
            and fields[1].startswith("nvidia")
        ):
            majors[fields[1]] = int(fields[0])
    if GPU_MAJOR not in majors and _GPU_MAJOR_OLD in majors:
        majors[GPU_MAJOR] = majors[_GPU_MAJOR_OLD]
    return majors


def parse_mig_minors(text: str) -> dict[str, int]:
    """`/proc/driver/nvidia-caps/mig-minors`: capability name (`config`, `gpu0/gi1/access`) -> minor."""
    minors: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit():
            minors[fields[0]] = int(fields[1])
    return minors


def _gpu_caps(mig_minors: Mapping[str, int], gpu: int) -> list[int]:
    found = []
    for name, minor in mig_minors.items():
        match = _CAP.fullmatch(name)
        if match and int(match.group(1)) == gpu:
            found.append(((int(match.group(2)), -1 if match.group(3) is None else int(match.group(3))), minor))
    return [minor for _, minor in sorted(found)]


def possible_device_nodes(
    dev_root: str, gpu_minors: Iterable[int], majors: Mapping[str, int], mig_minors: Mapping[str, int]
) -> list[DeviceNode]:
    """Every NVIDIA device node that can exist on this node (host paths under `dev_root`)."""

    def node(path: str, major_name: str, minor: int) -> list[DeviceNode]:
        major = majors.get(major_name)
        if major is None:
            _log.info("no %s major in /proc/devices; skipping %s", major_name, path)
            return []
        return [DeviceNode(str(PurePosixPath(dev_root) / path.lstrip("/")), major, minor)]

    def cap(minor: int) -> list[DeviceNode]:
        return node(f"/dev/nvidia-caps/nvidia-cap{minor}", CAPS_MAJOR, minor)

    nodes = [n for path, name, minor in CONTROL_DEVICES for n in node(path, name, minor)]
    nodes += [n for name in _MIG_CONTROL if name in mig_minors for n in cap(mig_minors[name])]
    for gpu in gpu_minors:
        nodes += node(f"/dev/nvidia{gpu}", GPU_MAJOR, gpu)
        nodes += [n for minor in _gpu_caps(mig_minors, gpu) for n in cap(minor)]
    return nodes


def _run(arguments: Sequence[str]) -> int:
    return subprocess.run(list(arguments), check=False).returncode


def _make_char_node(path: Path, major: int, minor: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(major, minor))


@dataclass(frozen=True)
class DevCharSetup:
    """The links for one validated driver. `run` and `make_node` are the side effects tests replace."""

    host_dev_char: str
    proc: str
    sys: str
    driver_root_in_container: str
    dev_root_in_container: str | None
    run: Callable[[Sequence[str]], int] = _run
    make_node: Callable[[Path, int, int], None] = _make_char_node

    def _read(self, relative: str) -> str:
        try:
            return Path(self.proc, relative).read_text()
        except OSError:
            return ""

    def _load_modules(self) -> None:
        chroot = [] if self.driver_root_in_container == "/" else ["chroot", self.driver_root_in_container]
        for module in KERNEL_MODULES:
            if self.run([*chroot, "/sbin/modprobe", module]) != 0:
                raise ValidationFailed(f"failed to load the kernel module {module}")

    def _create_control_nodes(self, majors: Mapping[str, int]) -> None:
        if self.dev_root_in_container is None:
            return
        for path, name, minor in CONTROL_DEVICES:
            target = Path(self.dev_root_in_container) / path.lstrip("/")
            if name in majors and not target.exists():
                try:
                    self.make_node(target, majors[name], minor)
                except OSError as error:
                    raise ValidationFailed(f"failed to create the device node {target}: {error}") from error
                _log.info("created device node %s", target)

    def _gpu_minors(self, known: tuple[int, ...] | None) -> tuple[int, ...]:
        if known is not None:
            return known
        try:
            functions = SysfsPciBus(self.sys).nvidia_functions()
        except OSError as error:
            raise ValidationFailed(f"cannot list the NVIDIA PCI devices: {error}") from error
        return tuple(range(sum(1 for f in functions if f.device_class.startswith("0x03"))))

    def create(self, info: DriverInfo, gpu_minors: tuple[int, ...] | None) -> list[Path]:
        """Load modules and create nodes if needed, then the links; returns the links created."""
        loaded = Path(self.sys, "module", "nvidia", "refcnt").exists()
        if not loaded and (info.is_host_driver or info.dev_root == info.driver_root):
            self._load_modules()
        majors = parse_device_majors(self._read("devices"))
        if not majors:
            raise ValidationFailed(f"no NVIDIA devices in {Path(self.proc, 'devices')}")
        self._create_control_nodes(majors)
        mig = parse_mig_minors(self._read("driver/nvidia-caps/mig-minors"))
        nodes = possible_device_nodes(info.dev_root, self._gpu_minors(gpu_minors), majors, mig)
        directory = Path(self.host_dev_char)
        directory.mkdir(mode=0o755, parents=True, exist_ok=True)
        created = []
        for device in nodes:
            link = directory / device.link_name
            try:
                link.symlink_to(device.path)
            except OSError as error:
                _log.debug("could not create %s -> %s: %s", link, device.path, error)
                continue
            created.append(link)
        _log.info("created %d of %d /dev/char links for NVIDIA devices", len(created), len(nodes))
        return created
