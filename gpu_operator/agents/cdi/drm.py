"""A GPU's DRM device nodes (`/dev/dri/cardN`, `/dev/dri/renderDN`) and their `/dev/dri/by-path` links.

With the `nvidia-drm` module loaded, each GPU also has DRM nodes, which graphics (Vulkan, EGL, X) and some video
programs open. NVIDIA's toolkit gives them to a container that gets the full GPU, the way it finds them
(nvidia-container-toolkit v1.20.0):

* the GPU's PCI bus id in sysfs form (`0000:3b:00.0`): NVML's `00000000:3B:00.0` lower-cased, an all-zero upper
  half of the 8-digit domain dropped (go-nvlib v0.12.0 pkg/nvlib/device/device.go `GetPCIBusID`);
* its DRM nodes: `/dev/dri/<name>` for each entry of `/sys/bus/pci/devices/<bus id>/drm/` (internal/info/drm/
  drm_devices.go `GetDeviceNodesByBusID`), kept where the node exists as a character device under the dev root;
* the links `/dev/dri/by-path/pci-<bus id>-card` and `-render`, which the container's udev-less `/dev` lacks: for
  each link under the dev root whose node is one of those given, `<link target>::<link>` for the
  `create-symlinks` hook (internal/platform-support/dgpu/by-path-hooks.go `deviceNodeLinks`).

The link is written at its container path. NVIDIA's joins the plugin's own dev root in front of it
(`filepath.Join(devRoot, ...)`), which only differs where that root is not `/`, and then names a path the
container does not have.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Collection

__all__ = ["SYS_ROOT", "sysfs_bus_id", "drm_nodes", "by_path_links"]

SYS_ROOT = "/sys"
_ZERO_UPPER_DOMAIN = re.compile(r"^0{4}[0-9a-f]{4}:")
_BY_PATH = ("/dev/dri/by-path/pci-{}-card", "/dev/dri/by-path/pci-{}-render")


def sysfs_bus_id(nvml_bus_id: str) -> str:
    """NVML's bus id (`00000000:3B:00.0`) as sysfs names the device (`0000:3b:00.0`)."""
    bus_id = nvml_bus_id.strip().lower()
    return bus_id[4:] if _ZERO_UPPER_DOMAIN.match(bus_id) else bus_id


def drm_nodes(bus_id: str, sys_root: str = SYS_ROOT) -> list[str]:
    """The DRM node paths (`/dev/dri/card1`, `/dev/dri/renderD128`) sysfs lists for the device, sorted."""
    try:
        names = os.listdir(posixpath.join(sys_root, "bus/pci/devices", bus_id, "drm"))
    except OSError:
        return []
    return [posixpath.join("/dev/dri", name) for name in sorted(names)]


def by_path_links(bus_id: str, dev_root: str, nodes: Collection[str]) -> list[str]:
    """`<target>::<link>` of the device's by-path links under `dev_root` that point at one of `nodes`.

    `nodes` are device node paths as the container sees them (`/dev/dri/card1`).
    """
    links: list[str] = []
    for link in (pattern.format(bus_id) for pattern in _BY_PATH):
        here = posixpath.join(dev_root, link.lstrip("/"))
        try:
            target = os.readlink(here)
        except OSError:
            continue
        node = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
        if node in nodes:
            links.append(f"{target}::{link}")
    return links
