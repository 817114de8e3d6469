"""The container edits of NVIDIA's CDI specs, made from a driver root (pkg/nvcdi, nvml mode, v1.20.2).

:func:`common_edits` is what every device of the `gpu` class shares (nvcdi's `GetCommonEdits`:
common-nvml.go newCommonNVMLDiscoverer, driver-nvml.go newDriverVersionDiscoverer, wrapper.go):

* the control device nodes that exist (`/dev/nvidia-modeset`, `/dev/nvidia-uvm-tools`, `/dev/nvidia-uvm`,
  `/dev/nvidiactl`);
* the driver's libraries (every `*.so.<version>` in its library directories and their `vdpau/`, and the legacy
  `libnvidia-nvvm70.so.*`), the graphics libraries, configuration files and `nvidia-xconfig`
  (internal/discover/graphics.go), the IPC sockets of nvidia-persistenced and nvidia-fabricmanager
  (internal/discover/ipc.go), the GSP firmware and the programs (`nvidia-smi`, `nvidia-debugdump`,
  `nvidia-persistenced`, the MPS control and server, `nvidia-imex`, `nvidia-imex-ctl`) - read-only bind mounts;
* the hooks: `create-symlinks` for the graphics links and for the driver's `.so` links
  (internal/discover/symlinks.go: `libcuda.so`, the SONAME links), `enable-cuda-compat`, `update-ldcache` of the
  library directories (internal/discover/ldconfig.go), `disable-device-node-modification` and
  `update-application-profile`;
* `NVIDIA_CTK_LIBCUDA_DIR`, `NVIDIA_VISIBLE_DEVICES=void` and the `/dev/null` mount at
  `/var/run/nvidia-container-devices/void`.

:func:`gpu_edits` is one full GPU's (full-gpu-nvml.go, newFullGPUDiscoverer): its `/dev/nvidia<minor>` and the
`apply-cuda-memory-limits` hook; :func:`mig_edits` one MIG device's (mig-device-nvml.go): the parent's node and
its GPU- and compute-instance capability nodes. Host paths are written as the host sees them: a path under the
driver root (or dev root) as this process sees it is moved to the host's, as the device plugin's root transform
does (k8s-device-plugin internal/cdi/cdi.go, getRootTransformer).
"""

from __future__ import annotations

import fnmatch
import os
import platform
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_operator.agents.cdi import hooks
from gpu_operator.agents.cdi.driver import DriverRoot, Found, is_char_device
from gpu_operator.agents.cdi.elf import soname

__all__ = [
    "CONTROL_NODES",
    "PROGRAMS",
    "MOUNT_OPTIONS",
    "IPC_MOUNT_OPTIONS",
    "Layout",
    "common_edits",
    "gpu_edits",
    "mig_edits",
    "library_mounts",
    "merge_edits",
]

Edits = dict[str, Any]

CONTROL_NODES = ("/dev/nvidia-modeset", "/dev/nvidia-uvm-tools", "/dev/nvidia-uvm", "/dev/nvidiactl")
PROGRAMS = ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
            "nvidia-cuda-mps-server", "nvidia-imex", "nvidia-imex-ctl")
MOUNT_OPTIONS = ("ro", "nosuid", "nodev", "rbind", "rprivate")
IPC_MOUNT_OPTIONS = ("nosuid", "nodev", "rbind", "rprivate", "noexec")
_IPC_SOCKETS = ("/nvidia-persistenced/socket", "/nvidia-fabricmanager/socket")
_GRAPHICS_LIBRARIES = ("libnvidia-egl-gbm.so.*.*", "libnvidia-egl-wayland.so.*.*", "libnvidia-egl-wayland2.so.*.*",
                       "libnvidia-egl-xcb.so.*.*", "libnvidia-egl-xlib.so.*.*")
_SHARE_CONFIGS = ("glvnd/egl_vendor.d/10_nvidia.json", "egl/egl_external_platform.d/15_nvidia_gbm.json",
                  "egl/egl_external_platform.d/10_nvidia_wayland.json",
                  "egl/egl_external_platform.d/09_nvidia_wayland2.json",
                  "egl/egl_external_platform.d/20_nvidia_xcb.json", "egl/egl_external_platform.d/20_nvidia_xlib.json",
                  "nvidia/nvoptix.bin", "X11/xorg.conf.d/10-nvidia.conf", "X11/xorg.conf.d/nvidia-drm-outputclass.conf")
_VULKAN_CONFIGS = ("vulkan/icd.d/nvidia_icd.json", "vulkan/icd.d/nvidia_layers.json",
                   "vulkan/implicit_layer.d/nvidia_layers.json")
_VULKAN_ARCH = {"x86_64": "vulkan/icd.d/nvidia_icd.x86_64.json", "aarch64": "vulkan/icd.d/nvidia_icd.aarch64.json"}
_XORG_ROOTS = ("/usr/lib/xorg", "/usr/lib64/xorg", "/usr/X11R6/lib", "/usr/X11R6/lib64")
_XORG_MODULES = ("modules/drivers", "modules/extensions", "modules/updates/drivers", "modules/updates/extensions")
_VOID_MOUNT = {"hostPath": "/dev/null", "containerPath": "/var/run/nvidia-container-devices/void",
               "options": ["ro", "nosuid", "nodev", "bind"]}


@dataclass(frozen=True)
class Layout:
    """Where the driver and the device nodes are, here and on the host, and the hook program on the host."""

    driver: DriverRoot
    dev_root: str = "/"
    host_driver_root: str = "/"
    host_dev_root: str = "/"
    hook_path: str = "/usr/bin/nvidia-ctk"

    def host_path(self, path: str) -> str:
        """A path found under the driver root here, as the host sees it."""
        return _moved(path, self.driver.root, self.host_driver_root)

    def device_node(self, path: str) -> dict[str, str] | None:
        """`{path, hostPath}` for a character device at `path` under the dev root; None when there is none."""
        here = posixpath.join(self.dev_root, path.lstrip("/"))
        if not is_char_device(here):
            return None
        return {"path": path, "hostPath": posixpath.normpath(posixpath.join(self.host_dev_root, path.lstrip("/")))}


def _moved(path: str, root: str, target: str) -> str:
    root = posixpath.normpath(root)
    if root != "/" and not (path == root or path.startswith(root + "/")):
        return path
    relative = path if root == "/" else posixpath.relpath(path, root)
    return posixpath.normpath(posixpath.join(target, relative.lstrip("/")))


def _mounts(layout: Layout, found: Iterable[Found], options: Sequence[str] = MOUNT_OPTIONS) -> list[dict[str, Any]]:
    return [{"hostPath": layout.host_path(f.host_path), "containerPath": f.container_path, "options": list(options)}
            for f in found]


def _hook(layout: Layout, name: str, args: Sequence[str] = ()) -> list[dict[str, Any]]:
    made = hooks.make_hook(layout.hook_path, name, args)
    return [] if made is None else [made]


def _driver_library(pattern: str, filename: str) -> bool:
    return fnmatch.fnmatchcase(filename, pattern + ".*.*")


def _so_link(name: str) -> str:
    stem, ext = posixpath.splitext(name)
    if not ext:
        return ""
    return name if ext == ".so" else _so_link(stem)


def _soname_links(found: Found) -> list[str]:
    """The `.so` links a library needs beside it, where the driver installed them (symlinks.go getDotSoSymlinks)."""
    directory, name = posixpath.split(found.container_path)
    if not _driver_library("*", name):
        return []
    declared = soname(found.host_path)
    if declared is None:
        return []
    host_dir = posixpath.dirname(found.host_path)
    links = []
    if declared != name and os.path.islink(posixpath.join(host_dir, declared)):
        links.append(f"{name}::{posixpath.join(directory, declared)}")
    link = _so_link(declared)
    if link and link != declared and os.path.islink(posixpath.join(host_dir, link)):
        links.append(f"{declared}::{posixpath.join(directory, link)}")
    return links


def _named_links(found: Found) -> list[str]:
    """symlinks.go getLinksForMount: the unversioned names applications open."""
    directory, name = posixpath.split(found.container_path)
    if _driver_library("libcuda.so", name):
        return [f"libcuda.so.1::{posixpath.join(directory, 'libcuda.so')}"]
    if _driver_library("libGLX_nvidia.so", name):
        return [f"{name}::{posixpath.join(directory, 'libGLX_indirect.so.0')}"]
    if _driver_library("libnvidia-opticalflow.so", name):
        return [f"libnvidia-opticalflow.so.1::{posixpath.join(directory, 'libnvidia-opticalflow.so')}"]
    return []


def _is_library(path: str) -> bool:
    base = posixpath.basename(path)
    if not fnmatch.fnmatchcase(base, "lib?*.so*"):
        return False
    tail = base.split(".so")[-1]
    return len(base.split(".so")) == 1 or tail == "" or tail.startswith(".")


def library_mounts(driver: DriverRoot) -> list[Found]:
    """The driver's libraries (driver-nvml.go NewDriverLibraryDiscoverer): versioned ones, then legacy NVVM."""
    version = driver.version
    versioned = driver.driver_libraries("*.so." + version, "vdpau")
    legacy = driver.driver_libraries("libnvidia-nvvm70.so.*")
    return driver.found([*versioned, *legacy])


def _driver_hooks(layout: Layout, libraries: Sequence[Found]) -> list[dict[str, Any]]:
    links: list[str] = []
    for found in {f.container_path: f for f in libraries}.values():
        for link in (*_named_links(found), *_soname_links(found)):
            if link not in links:
                links.append(link)
    folders = list(dict.fromkeys(posixpath.dirname(f.container_path) for f in libraries
                                 if _is_library(f.container_path)))
    return [*_hook(layout, hooks.CREATE_SYMLINKS, links),
            *_hook(layout, hooks.ENABLE_CUDA_COMPAT, [f"--host-driver-version={layout.driver.version}"]),
            *(_hook(layout, hooks.UPDATE_LDCACHE, folders) if folders else []),
            *_hook(layout, hooks.DISABLE_DEVICE_NODE_MODIFICATION)]


def _graphics(layout: Layout) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """graphics.go NewGraphicsMountsDiscoverer: (mounts, hooks)."""
    driver = layout.driver
    version = driver.version
    allocator, producer, glxserver = (f"libnvidia-allocator.so.{version}", f"libnvidia-vulkan-producer.so.{version}",
                                      f"libglxserver_nvidia.so.{version}")
    libraries: list[str] = []
    for pattern in (*_GRAPHICS_LIBRARIES, allocator, producer):
        libraries += driver.libraries(pattern)
    xorg_dirs = [posixpath.join(d, sub) for d in driver.library_dirs for sub in ("nvidia/xorg", *(
        f"xorg/{m}" for m in _XORG_MODULES))] + [f"{r}/{m}" for r in _XORG_ROOTS for m in _XORG_MODULES]
    for name in ("nvidia_drv.so", glxserver):
        libraries += driver.files(name, xorg_dirs, count=1)
    found = driver.found(libraries)
    links: list[str] = []
    for f in found:
        directory, name = posixpath.split(f.container_path)
        if name == allocator:
            links.append(f"../libnvidia-allocator.so.1::{posixpath.join(directory, 'gbm', 'nvidia-drm_gbm.so')}")
        elif name == producer:
            links.append(f"{name}::{posixpath.join(directory, 'libnvidia-vulkan-producer.so')}")
        elif name == glxserver:
            links.append(f"{name}::{posixpath.join(directory, 'libglxserver_nvidia.so')}")
    mounts = [f for f in found if posixpath.basename(f.container_path) != allocator]
    mounts += driver.found(driver.program("nvidia-xconfig"))
    configs: list[Found] = []
    for targets, container_root in ((_SHARE_CONFIGS, "/usr/share"), (("OpenCL/vendors/nvidia.icd",), "/etc")):
        configs += _configs(driver, targets, container_root, fallback=False)
    vulkan = list(_VULKAN_CONFIGS)
    if platform.machine() in _VULKAN_ARCH:
        vulkan.append(_VULKAN_ARCH[platform.machine()])
    configs += _configs(driver, vulkan, "/etc", fallback=True)
    return _mounts(layout, [*mounts, *configs]), _hook(layout, hooks.CREATE_SYMLINKS, links)


def _configs(driver: DriverRoot, targets: Sequence[str], container_root: str, fallback: bool) -> list[Found]:
    """mounts-to-container-path.go: the first of each file in the config dirs, at `container_root/<target>`."""
    found: list[Found] = []
    seen: set[str] = set()
    for target in targets:
        candidates = driver.files(target, driver.config_dirs)
        if not candidates and fallback:
            candidates = driver.files(target)
        if not candidates or candidates[0] in seen:
            continue
        seen.add(candidates[0])
        found.append(Found(candidates[0], posixpath.join(container_root, target)))
    return found


def common_edits(layout: Layout) -> Edits:
    """The spec-wide container edits (see the module docstring). Raises LookupError without a driver."""
    driver = layout.driver
    version = driver.version
    nodes = [n for n in (layout.device_node(p) for p in CONTROL_NODES) if n is not None]
    graphics_mounts, graphics_hooks = _graphics(layout)
    libraries = library_mounts(driver)
    ipc = [f for socket in _IPC_SOCKETS for f in driver.found(driver.files(socket, ("/run", "/var/run"), count=1))]
    ipc += driver.found(driver.files("/tmp/nvidia-mps", count=1))
    firmware = driver.found([p for pattern in (f"nvidia/{version}/gsp*.bin", f"nvidia/{version}/ucodes*.bin")
                             for p in driver.firmware(pattern)])
    programs = driver.found([p for name in PROGRAMS for p in driver.program(name)])
    mounts = [*graphics_mounts, *_mounts(layout, libraries), *_mounts(layout, ipc, IPC_MOUNT_OPTIONS),
              *_mounts(layout, firmware), *_mounts(layout, programs), dict(_VOID_MOUNT)]
    mounts = list({(m["hostPath"], m["containerPath"]): m for m in mounts}.values())
    edits: Edits = {
        "env": [f"NVIDIA_CTK_LIBCUDA_DIR={':'.join(driver.library_dirs)}", "NVIDIA_VISIBLE_DEVICES=void"],
        "deviceNodes": nodes,
        "mounts": mounts,
        "hooks": [*graphics_hooks, *_driver_hooks(layout, libraries),
                  *_hook(layout, hooks.UPDATE_APPLICATION_PROFILE)],
    }
    return {k: v for k, v in edits.items() if v}


def gpu_edits(layout: Layout, minor: int | None, uuid: str) -> Edits:
    """One full GPU: its device node (when it exists) and the CUDA memory-limits hook."""
    node = None if minor is None else layout.device_node(f"/dev/nvidia{minor}")
    edits: Edits = {"deviceNodes": [node] if node else [],
                    "hooks": _hook(layout, hooks.APPLY_CUDA_MEMORY_LIMITS, [layout.host_driver_root, uuid])}
    return {k: v for k, v in edits.items() if v}


def mig_edits(layout: Layout, parent_minor: int, capability_paths: Sequence[str]) -> Edits:
    """One MIG device: the parent GPU's node and the capability nodes (those that exist)."""
    paths = [f"/dev/nvidia{parent_minor}", *capability_paths]
    nodes = [n for n in (layout.device_node(p) for p in paths) if n is not None]
    return {"deviceNodes": nodes} if nodes else {}


def merge_edits(edits: Iterable[Edits]) -> Edits:
    """Several devices' edits as one (the `all` device), each entry once, in order."""
    merged: Edits = {}
    for one in edits:
        for key, values in one.items():
            into = merged.setdefault(key, [])
            into += [v for v in values if v not in into]
    return merged
