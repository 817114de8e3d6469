"""The container edits of NVIDIA's CDI specs, made from a driver root (pkg/nvcdi, nvml mode, v1.20.0).

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

:func:`gpu_edits` is one full GPU's (full-gpu-nvml.go newFullGPUDiscoverer, platform-support/dgpu/nvml.go
newNvmlDGPUDiscoverer): its `/dev/nvidia<minor>`, its DRM nodes and the `create-symlinks` hook of their
`/dev/dri/by-path` links (see :mod:`.drm`); :func:`mig_edits` one MIG device's (mig-device-nvml.go,
newNvmlMigDiscoverer): the parent's node and its GPU- and compute-instance capability nodes, and the parent's DRM
nodes too for a profile with graphics (`+gfx`). A device node that is not read-writable by all brings its group
in `additionalGids` (internal/edits/device.go getAdditionalGIDs), so a container process outside that group
(`video`, `render`) can still open it.

The feature flags (see :mod:`.features`) and the disabled hooks are the layout's. Host paths are written as the host
sees them: a path under the driver root (or dev root) as this process sees it is moved to the host's, as the device
plugin's root transform does (k8s-device-plugin internal/cdi/cdi.go, getRootTransformer).
"""

from __future__ import annotations

import fnmatch
import os
import stat
import platform
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_operator.agents.cdi import drm, features, hooks
from gpu_operator.agents.cdi.driver import DriverRoot, Found, is_char_device
from gpu_operator.agents.cdi.elf import soname

__all__ = [
    "CONTROL_NODES",
    "Edits",
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
#: enable-explicit-driver-libraries (driver-nvml.go getExplicitDriverLibraryMounts).
_EXPLICIT_LIBRARIES = ("libEGL.so", "libGL.so", "libGLESv1_CM.so", "libGLESv2.so", "libGLX.so", "libGLdispatch.so",
                       "libOpenCL.so", "libOpenGL.so", "libnvidia-api.so", "libnvidia-egl-xcb.so",
                       "libnvidia-egl-xlib.so")
_ALL_RW = stat.S_IROTH | stat.S_IWOTH
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
    sys_root: str = drm.SYS_ROOT
    feature_flags: frozenset[str] = frozenset()
    disabled_hooks: frozenset[str] = frozenset()

    def host_path(self, path: str) -> str:
        """A path found under the driver root here, as the host sees it."""
        return _moved(path, self.driver.root, self.host_driver_root)

    def device_node(self, path: str) -> dict[str, str] | None:
        """`{path, hostPath}` for a character device at `path` under the dev root; None when there is none."""
        if not is_char_device(self.dev_path(path)):
            return None
        return {"path": path, "hostPath": posixpath.normpath(posixpath.join(self.host_dev_root, path.lstrip("/")))}

    def dev_path(self, path: str) -> str:
        """A device node's path under the dev root, as this process sees it."""
        return posixpath.join(self.dev_root, path.lstrip("/"))

    def node_edits(self, paths: Iterable[str]) -> Edits:
        """The device nodes among `paths` that exist, with the groups needed to open them (`additionalGids`)."""
        nodes = [n for n in (self.device_node(p) for p in paths) if n is not None]
        groups: list[int] = []
        if features.NO_ADDITIONAL_GIDS not in self.feature_flags:
            for node in nodes:
                group = _needed_group(self.dev_path(node["path"]))
                if group is not None and group not in groups:
                    groups.append(group)
        edits: Edits = {"deviceNodes": nodes, "additionalGids": groups}
        return {k: v for k, v in edits.items() if v}


def _needed_group(path: str) -> int | None:
    """The node's group when it is not root's and the node is not read-writable by all (getAdditionalGIDs)."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    if status.st_gid == 0 or status.st_mode & _ALL_RW == _ALL_RW:
        return None
    return status.st_gid


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
    made = hooks.make_hook(layout.hook_path, name, args, layout.disabled_hooks)
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


def library_mounts(driver: DriverRoot, explicit: bool = False) -> list[Found]:
    """The driver's libraries (driver-nvml.go NewDriverLibraryDiscoverer): versioned ones, legacy NVVM, and with
    `explicit` (enable-explicit-driver-libraries) the explicit list."""
    version = driver.version
    versioned = driver.driver_libraries("*.so." + version, "vdpau")
    legacy = driver.driver_libraries("libnvidia-nvvm70.so.*")
    named = [p for name in _EXPLICIT_LIBRARIES for p in driver.driver_libraries(name)] if explicit else []
    return driver.found([*versioned, *legacy, *named])


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
    graphics_mounts, graphics_hooks = _graphics(layout)
    libraries = library_mounts(driver, features.EXPLICIT_DRIVER_LIBRARIES in layout.feature_flags)
    ipc = [] if features.DISABLE_IPC in layout.feature_flags else _ipc(driver)
    firmware = driver.found([p for pattern in (f"nvidia/{version}/gsp*.bin", f"nvidia/{version}/ucodes*.bin")
                             for p in driver.firmware(pattern)])
    programs = driver.found([p for name in PROGRAMS for p in driver.program(name)])
    mounts = [*graphics_mounts, *_mounts(layout, libraries), *_mounts(layout, ipc, IPC_MOUNT_OPTIONS),
              *_mounts(layout, firmware), *_mounts(layout, programs), dict(_VOID_MOUNT)]
    mounts = list({(m["hostPath"], m["containerPath"]): m for m in mounts}.values())
    edits: Edits = {
        "env": [f"NVIDIA_CTK_LIBCUDA_DIR={':'.join(driver.library_dirs)}", "NVIDIA_VISIBLE_DEVICES=void"],
        **layout.node_edits(CONTROL_NODES),
        "mounts": mounts,
        "hooks": [*graphics_hooks, *_driver_hooks(layout, libraries),
                  *_hook(layout, hooks.UPDATE_APPLICATION_PROFILE)],
    }
    return {k: v for k, v in edits.items() if v}


def _ipc(driver: DriverRoot) -> list[Found]:
    """ipc.go NewIPCDiscoverer: the persistenced and fabric manager sockets, the MPS pipe directory."""
    found = [f for socket in _IPC_SOCKETS for f in driver.found(driver.files(socket, ("/run", "/var/run"), count=1))]
    return found + driver.found(driver.files("/tmp/nvidia-mps", count=1))


def _with_drm(layout: Layout, paths: Sequence[str], bus_id: str | None) -> Edits:
    """The nodes of `paths` and, with a bus id, the GPU's DRM nodes and the hook of their by-path links."""
    sysfs_id = drm.sysfs_bus_id(bus_id) if bus_id else None
    edits = layout.node_edits([*paths, *(drm.drm_nodes(sysfs_id, layout.sys_root) if sysfs_id else ())])
    if sysfs_id:
        nodes = {n["path"] for n in edits.get("deviceNodes", [])}
        edits["hooks"] = _hook(layout, hooks.CREATE_SYMLINKS, drm.by_path_links(sysfs_id, layout.dev_root, nodes))
    return {k: v for k, v in edits.items() if v}


def gpu_edits(layout: Layout, minor: int | None, bus_id: str | None) -> Edits:
    """One full GPU (NVML's `bus_id`): its device node and DRM nodes (those that exist), their by-path links."""
    return _with_drm(layout, [] if minor is None else [f"/dev/nvidia{minor}"], bus_id)


def mig_edits(layout: Layout, parent_minor: int, capability_paths: Sequence[str],
              graphics_bus_id: str | None = None) -> Edits:
    """One MIG device: the parent GPU's node and the capability nodes (those that exist); for a profile with
    graphics, the parent's bus id (`graphics_bus_id`) brings its DRM nodes as a full GPU's."""
    return _with_drm(layout, [f"/dev/nvidia{parent_minor}", *capability_paths], graphics_bus_id)


def merge_edits(edits: Iterable[Edits]) -> Edits:
    """Several devices' edits as one (the `all` device), each entry once, in order."""
    merged: Edits = {}
    for one in edits:
        for key, values in one.items():
            into = merged.setdefault(key, [])
            into += [v for v in values if v not in into]
    return merged
