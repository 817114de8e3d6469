"""A driver root laid out like a real NVIDIA driver installation, for CDI spec tests.

:func:`make_driver_root` writes, under a directory, what the driver container (or a host install) leaves on a
node: the user-space libraries `lib*.so.<version>` in `/usr/lib/x86_64-linux-gnu` as small ELF files carrying
their SONAME, with the SONAME and `.so` symlinks `ldconfig` and the installer make; `vdpau/`, the legacy NVVM
library and the graphics libraries; the programs in `/usr/bin`; the GSP firmware in
`/lib/firmware/nvidia/<version>/`; the nvidia-persistenced socket; the EGL, Vulkan and OpenCL configuration files;
and, under `/dev`, character device nodes for each GPU, the control devices and the MIG capabilities
(`/dev/nvidia-caps/nvidia-cap<N>`) with a matching `driver/nvidia-caps/mig-minors` under `proc/`.

Given the GPUs' PCI bus ids (as NVML writes them), it also lays out what `nvidia-drm` and udev make: each GPU's DRM
nodes `/dev/dri/card<minor+1>` (mode 0660, group `video`, as udev leaves them) and `/dev/dri/renderD<128+minor>`
(0666, group `render`), their `/dev/dri/by-path/pci-<bus id>-{card,render}` links, and the sysfs entries
`sys/bus/pci/devices/<bus id>/drm/{card..,renderD..}` the toolkit finds them by; plus `/dev/dri/card0` of a
non-NVIDIA display device (a server's BMC), which no GPU may bring.

Device nodes need `mknod` (root, or CAP_MKNOD): :func:`can_make_device_nodes` says whether this process can, and
callers skip their test when it cannot. The socket is a plain file (a bound socket's path is limited to 107
bytes, and NVIDIA's lookup accepts any non-directory).
"""

from __future__ import annotations

import os
import stat
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DRIVER_VERSION", "VIDEO_GID", "FakeDriverRoot", "can_make_device_nodes", "elf_library", "make_driver_root",
           "sysfs_bus_id"]

DRIVER_VERSION = "580.159.04"
_LIB_DIR = "usr/lib/x86_64-linux-gnu"
_NVIDIA_MAJOR = 195
_CAPS_MAJOR = 511
_UVM_MAJOR = 235
_DRM_MAJOR = 226
_RENDER_BASE = 128
#: The groups udev gives `/dev/dri/card*` and `/dev/dri/renderD*` (Debian's and Ubuntu's `video`, `render`).
VIDEO_GID = 44
RENDER_GID = 109
_BMC_BUS_ID = "0000:02:00.0"
#: file name (with {v} for the version) -> SONAME; the SONAME link is made when it differs from the file name.
_LIBRARIES = {
    "libcuda.so.{v}": "libcuda.so.1",
    "libnvidia-ml.so.{v}": "libnvidia-ml.so.1",
    "libnvidia-ptxjitcompiler.so.{v}": "libnvidia-ptxjitcompiler.so.1",
    "libcudadebugger.so.{v}": "libcudadebugger.so.1",
    "libnvidia-nvvm.so.{v}": "libnvidia-nvvm.so.4",
    "libnvidia-cfg.so.{v}": "libnvidia-cfg.so.1",
    "libnvidia-opencl.so.{v}": "libnvidia-opencl.so.1",
    "libnvidia-gpucomp.so.{v}": "libnvidia-gpucomp.so.{v}",
    "libnvidia-allocator.so.{v}": "libnvidia-allocator.so.1",
    "libnvidia-vulkan-producer.so.{v}": "libnvidia-vulkan-producer.so.{v}",
    "libGLX_nvidia.so.{v}": "libGLX_nvidia.so.0",
    "libnvidia-opticalflow.so.{v}": "libnvidia-opticalflow.so.1",
    "libnvidia-egl-gbm.so.1.1.2": "libnvidia-egl-gbm.so.1",
    "libnvidia-nvvm70.so.4": "libnvidia-nvvm70.so.4",
    "vdpau/libvdpau_nvidia.so.{v}": "libvdpau_nvidia.so.1",
}
#: Unversioned development links the installer makes (`libcuda.so -> libcuda.so.1`).
_DEV_LINKS = {"libcuda.so": "libcuda.so.1", "libnvidia-ml.so": "libnvidia-ml.so.1",
              "libnvidia-opencl.so": "libnvidia-opencl.so.1"}
PROGRAMS = ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
            "nvidia-cuda-mps-server")
_CONFIGS = ("usr/share/glvnd/egl_vendor.d/10_nvidia.json", "usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json",
            "usr/share/vulkan/icd.d/nvidia_icd.json", "usr/share/vulkan/implicit_layer.d/nvidia_layers.json",
            "etc/OpenCL/vendors/nvidia.icd")
_FIRMWARE = ("gsp_ga10x.bin", "gsp_tu10x.bin")


def elf_library(soname: str) -> bytes:
    """A minimal 64-bit little-endian ELF shared object whose dynamic section names `soname`."""
    dynstr = b"\0" + soname.encode() + b"\0"
    dynamic = struct.pack("<qQqQ", 14, 1, 0, 0)
    shstrtab = b"\0.dynstr\0.dynamic\0.shstrtab\0"
    offset = 64
    layout = []
    for data, align in ((dynstr, 1), (dynamic, 8), (shstrtab, 1)):
        offset += -offset % align
        layout.append((offset, data))
        offset += len(data)
    shoff = offset + (-offset % 8)
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, 4, 3)
    body = bytearray(header)
    for at, data in layout:
        body += bytes(at - len(body)) + data
    body += bytes(shoff - len(body))
    sections = [(0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                (1, 3, 2, 0, layout[0][0], len(dynstr), 0, 0, 1, 0),
                (9, 6, 3, 0, layout[1][0], len(dynamic), 1, 0, 8, 16),
                (18, 3, 0, 0, layout[2][0], len(shstrtab), 0, 0, 1, 0)]
    for section in sections:
        body += struct.pack("<IIQQQQIIQQ", *section)
    return bytes(body)


def can_make_device_nodes() -> bool:
    """Whether this process may create character device nodes (mknod)."""
    with tempfile.TemporaryDirectory() as scratch:
        try:
            os.mknod(os.path.join(scratch, "probe"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except OSError:
            return False
    return True


@dataclass(frozen=True)
class FakeDriverRoot:
    """What :func:`make_driver_root` made: the root, the driver version, and each GPU's minor and UUID."""

    root: Path
    version: str
    minors: tuple[int, ...]
    proc_root: Path
    caps: dict[str, int] = field(default_factory=dict)
    sys_root: Path | None = None
    #: GPU minor -> its DRM nodes (`/dev/dri/card1`, `/dev/dri/renderD128`).
    drm: dict[int, tuple[str, str]] = field(default_factory=dict)

    @property
    def lib_dir(self) -> Path:
        return self.root / _LIB_DIR


def _node(path: Path, major: int, minor: int, mode: int = 0o666, gid: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mknod(path, stat.S_IFCHR | mode, os.makedev(major, minor))
    os.chmod(path, mode)
    if gid:
        os.chown(path, -1, gid)


def sysfs_bus_id(nvml_bus_id: str) -> str:
    """`00000000:3B:00.0` as sysfs writes it: `0000:3b:00.0`."""
    domain, _, rest = nvml_bus_id.lower().partition(":")
    return f"{domain[-4:]}:{rest}"


def _drm(base: Path, sys_root: Path, bus_id: str, card: int, render: int) -> tuple[str, str]:
    """One display device's DRM nodes, by-path links and sysfs entries; returns the nodes' paths."""
    names = (f"card{card}", f"renderD{render}")
    for name, minor, mode, gid in ((names[0], card, 0o660, VIDEO_GID), (names[1], render, 0o666, RENDER_GID)):
        _node(base / "dev/dri" / name, _DRM_MAJOR, minor, mode, gid)
        (sys_root / "bus/pci/devices" / bus_id / "drm" / name).mkdir(parents=True)
    by_path = base / "dev/dri/by-path"
    by_path.mkdir(parents=True, exist_ok=True)
    for kind, name in zip(("card", "render"), names, strict=True):
        (by_path / f"pci-{bus_id}-{kind}").symlink_to(f"../{name}")
    return f"/dev/dri/{names[0]}", f"/dev/dri/{names[1]}"


def make_driver_root(base: Path, minors: tuple[int, ...] = (0, 1), version: str = DRIVER_VERSION,
                     mig_instances: tuple[tuple[int, int, int], ...] = (),
                     proc_root: Path | None = None, bus_ids: tuple[str, ...] = ()) -> FakeDriverRoot:
    """Lay out a driver root under `base` for GPUs with `minors`; `mig_instances` are (GPU minor, GI, CI).

    The MIG capability table goes to `<proc_root>/driver/nvidia-caps/mig-minors` (`proc_root` defaults to
    `base/proc`). `bus_ids` (NVML's form, one per minor, in order) add the GPUs' DRM nodes and a sysfs tree at
    `base/sys`.

    Raises PermissionError when device nodes cannot be made (see :func:`can_make_device_nodes`).
    """
    lib_dir = base / _LIB_DIR
    for name, soname in _LIBRARIES.items():
        path = lib_dir / name.format(v=version)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(elf_library(soname.format(v=version)))
        link = path.parent / soname.format(v=version)
        if link != path:
            link.symlink_to(path.name)
    for name, target in _DEV_LINKS.items():
        (lib_dir / name).symlink_to(target)
    for program in PROGRAMS:
        path = base / "usr/bin" / program
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    for firmware in _FIRMWARE:
        path = base / "lib/firmware/nvidia" / version / firmware
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0")
    for config in _CONFIGS:
        path = base / config
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")
    socket = base / "run/nvidia-persistenced/socket"
    socket.parent.mkdir(parents=True)
    socket.write_text("")
    dev = base / "dev"
    for minor in minors:
        _node(dev / f"nvidia{minor}", _NVIDIA_MAJOR, minor)
    _node(dev / "nvidiactl", _NVIDIA_MAJOR, 255)
    _node(dev / "nvidia-modeset", _NVIDIA_MAJOR, 254)
    _node(dev / "nvidia-uvm", _UVM_MAJOR, 0)
    _node(dev / "nvidia-uvm-tools", _UVM_MAJOR, 1)
    caps = {"config": 1, "monitor": 2}
    for gpu, gi, ci in mig_instances:
        caps.setdefault(f"gpu{gpu}/gi{gi}/access", len(caps) + 1)
        caps.setdefault(f"gpu{gpu}/gi{gi}/ci{ci}/access", len(caps) + 1)
    for name, minor in caps.items():  # the driver's modes: config and monitor root's alone, access caps readable
        _node(dev / "nvidia-caps" / f"nvidia-cap{minor}", _CAPS_MAJOR, minor, 0o444 if "/" in name else 0o400)
    proc = proc_root or base / "proc"
    table = proc / "driver" / "nvidia-caps" / "mig-minors"
    table.parent.mkdir(parents=True, exist_ok=True)
    table.write_text("".join(f"{key} {minor}\n" for key, minor in caps.items()))
    if not bus_ids:
        return FakeDriverRoot(base, version, minors, proc, caps)
    sys_root = base / "sys"
    _drm(base, sys_root, _BMC_BUS_ID, 0, _RENDER_BASE + 64)
    drm = {minor: _drm(base, sys_root, sysfs_bus_id(bus), minor + 1, _RENDER_BASE + minor)
           for minor, bus in zip(minors, bus_ids, strict=True)}
    return FakeDriverRoot(base, version, minors, proc, caps, sys_root, drm)
