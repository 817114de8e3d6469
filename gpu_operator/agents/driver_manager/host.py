"""The host side: reading the node's driver state, and changing it (unload a module, unmount, unbind, remove).

In the init container these paths are the host's: /proc/modules and /proc/self/mountinfo (the kernel's, seen from
the container), /sys (mounted from the host), /run/nvidia and /run/mellanox/drivers (host paths), and the host's
root filesystem at /host. Every path is read under `root` (`/` in the pod), so tests and dry runs can point the
program at a directory shaped like a host. Commands (nvidia-smi in the host's root, rmmod, umount) go through a
:data:`~gpu_operator.agents.mig_manager.host_commands.Runner`, which tests replace; mount points and module names
in commands are the pod's own, never prefixed.

What is read, and where NVIDIA's program reads it:

- a host driver: `chroot /host nvidia-smi --query-gpu=driver_version --format=csv,noheader` succeeds with output.
  Asked once: a driver the host installed does not appear or vanish while this program runs.
- loaded modules: /proc/modules (NVIDIA stats /sys/module/<name>/refcnt; both list loaded modules only).
- the loaded driver's config digest: /run/nvidia/nvidia-driver.state, written by the driver container.
- the stale driver rootfs: mount points at or under /run/nvidia/driver in /proc/self/mountinfo.
- vfio-pci: NVIDIA (vendor 0x10de) devices listed under /sys/bus/pci/drivers/vfio-pci.
- MOFED: Mellanox devices (vendor 0x15b3) under /sys/bus/pci/devices; ready when mlx5_core is loaded (host
  MOFED) or /run/mellanox/drivers/.driver-ready exists (the MOFED driver pod).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpu_operator.agents.driver_manager.snapshot import HostFacts
from gpu_operator.agents.mig_manager.host_commands import Runner

__all__ = [
    "DRIVER_ROOT",
    "HostError",
    "HostProbe",
    "HostActions",
    "driver_mounts",
    "loaded_modules",
]

DRIVER_ROOT = "/run/nvidia/driver"
STATE_FILE = "run/nvidia/nvidia-driver.state"
MOFED_READY_FILE = "run/mellanox/drivers/.driver-ready"
PCI_DEVICES = "sys/bus/pci/devices"
VFIO_DRIVER = "sys/bus/pci/drivers/vfio-pci"
NVIDIA_VENDOR = "0x10de"
MELLANOX_VENDOR = "0x15b3"
_PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\Z")
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


class HostError(RuntimeError):
    """The host's state could not be read."""


def loaded_modules(text: str) -> frozenset[str]:
    """Module names from /proc/modules (the first field of each line)."""
    return frozenset(line.split()[0] for line in text.splitlines() if line.strip())


def driver_mounts(mountinfo: str, root: str = DRIVER_ROOT) -> tuple[str, ...]:
    """Mount points at or under `root` in /proc/self/mountinfo, deepest (and latest) first."""
    found: list[str] = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        point = _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4])
        if (point == root or point.startswith(root + "/")) and point not in found:
            found.append(point)
    order = {point: index for index, point in enumerate(found)}
    return tuple(sorted(found, key=lambda point: (point.count("/"), order[point]), reverse=True))


@dataclass
class HostProbe:
    """Reads :class:`HostFacts` under `root`."""

    root: Path
    runner: Runner
    use_host_mofed: bool = False
    _host_driver: str | None = field(default=None, init=False, repr=False)

    def _path(self, relative: str) -> Path:
        return self.root / relative

    def _read(self, relative: str, default: str | None = None) -> str:
        try:
            return self._path(relative).read_text()
        except FileNotFoundError:
            if default is None:
                raise HostError(f"{self._path(relative)} does not exist") from None
            return default
        except OSError as error:
            raise HostError(f"cannot read {self._path(relative)}: {error.strerror}") from None

    def host_driver(self) -> str:
        """The host's own driver version ("" when it has none); asked once."""
        if self._host_driver is None:
            status, output = self.runner(
                ["chroot", str(self.root / "host"), "nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
            )
            lines = output.strip().splitlines()
            self._host_driver = lines[0].strip() if status == 0 and lines else ""
        return self._host_driver

    def _vendor(self, address: str) -> str:
        return self._read(f"{PCI_DEVICES}/{address}/vendor", "").strip().lower()

    def _pci_addresses(self, relative: str) -> list[str]:
        directory = self._path(relative)
        if not directory.is_dir():
            return []
        return sorted(entry.name for entry in directory.iterdir() if _PCI_ADDRESS.match(entry.name))

    def observe(self) -> HostFacts:
        modules = loaded_modules(self._read("proc/modules"))
        mellanox = any(self._vendor(a) == MELLANOX_VENDOR for a in self._pci_addresses(PCI_DEVICES))
        if self.use_host_mofed:
            mofed_ready = "mlx5_core" in modules
        else:
            mofed_ready = self._path(MOFED_READY_FILE).exists()
        return HostFacts(
            host_driver=self.host_driver(),
            modules=modules,
            loaded_digest=self._read(STATE_FILE, "").strip(),
            driver_mounts=driver_mounts(self._read("proc/self/mountinfo", "")),
            pid_file=self._path("run/nvidia/nvidia-driver.pid").exists(),
            vfio_bound=tuple(a for a in self._pci_addresses(VFIO_DRIVER) if self._vendor(a) == NVIDIA_VENDOR),
            mellanox=mellanox,
            mofed_ready=mofed_ready,
        )


@dataclass
class HostActions:
    """Changes the host; each method returns "" on success or the reason it failed."""

    root: Path
    runner: Runner

    def _command(self, command: Sequence[str]) -> str:
        status, output = self.runner(command)
        return "" if status == 0 else f"`{' '.join(command)}` exited {status}: {output or 'no output'}"

    def unload_module(self, module: str) -> str:
        return self._command(["rmmod", module])

    def unmount(self, path: str) -> str:
        # lazily, as NVIDIA's recursive unmount does (MNT_DETACH): a process still inside cannot block it
        return self._command(["umount", "--lazy", path])

    def remove_file(self, path: str) -> str:
        try:
            (self.root / path.lstrip("/")).unlink(missing_ok=True)
        except OSError as error:
            return f"cannot remove {path}: {error.strerror}"
        return ""

    def unbind_vfio(self, addresses: Sequence[str]) -> str:
        """Unbind every address from vfio-pci; the failures, joined ("" when none)."""
        problems = []
        for address in addresses:
            try:
                (self.root / VFIO_DRIVER / "unbind").write_text(address)
            except OSError as error:
                problems.append(f"{address}: {error.strerror}")
        return "; ".join(problems)
