"""CDI specs for the devices the CDI strategies name: their content, the CDI rules they follow, and their files.

The `gpu` specs are made from a driver root laid out like a real installation (tests/support/fake_driver_root.py),
and must hold what NVIDIA's toolkit injects from it (the e2e tier compares them with `nvidia-ctk cdi generate`).
The coexistence tests model a container runtime's CDI cache (tests/support/cdi_cache.py) on one spec directory that
both our plugin and NVIDIA's write to, in either order. `CDI_SCHEMA` is our own JSON schema of a CDI spec, written
from the CDI specification's field list and name rules (vendor and class start with a letter; device names start
with a letter or digit; `path`, `hostPath` and `containerPath` are the required fields of device nodes and mounts);
every generated spec must satisfy it and :func:`spec_problems`, and each rule of :func:`spec_problems` is shown
refusing a spec that breaks it.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gpu_operator.agents.device_plugin.cdi_spec import (
    gpu_spec,
    layout_for,
    minimum_version,
    spec_path,
    spec_problems,
    specs_for,
    write_specs,
)
from gpu_operator.agents.device_plugin.devices import DeviceError, PluginDevice, Resource, build_resources
from gpu_operator.agents.device_plugin.settings import IdStrategy, ListStrategy, MigStrategy, Settings
from gpu_operator.agents.nvml import open_nvml
from tests.support.cdi_cache import CdiCache, load_cache, nvidia_spec_file
from tests.support.fake_driver_root import (
    VIDEO_GID,
    FakeDriverRoot,
    can_make_device_nodes,
    make_driver_root,
    sysfs_bus_id,
)

_NAME = r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$"
_NODE = {"type": "object", "required": ["path"], "properties": {
    "path": {"type": "string", "pattern": "^/"}, "hostPath": {"type": "string", "pattern": "^/"},
    "type": {"type": "string"}, "major": {"type": "integer"}, "minor": {"type": "integer"},
    "permissions": {"type": "string"}, "uid": {"type": "integer", "minimum": 0},
    "gid": {"type": "integer", "minimum": 0}}, "additionalProperties": False}
_MOUNT = {"type": "object", "required": ["hostPath", "containerPath"], "properties": {
    "hostPath": {"type": "string"}, "containerPath": {"type": "string"},
    "options": {"type": "array", "items": {"type": "string"}}, "type": {"type": "string"}}}
_EDITS = {"type": "object", "additionalProperties": False, "properties": {
    "env": {"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*="}},
    "deviceNodes": {"type": "array", "items": _NODE}, "mounts": {"type": "array", "items": _MOUNT},
    "hooks": {"type": "array"}, "intelRdt": {"type": "object"}, "netDevices": {"type": "array"},
    "additionalGids": {"type": "array", "items": {"type": "integer", "minimum": 0}}}}
CDI_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["cdiVersion", "kind", "devices"],
    "additionalProperties": False,
    "properties": {
        "cdiVersion": {"enum": ["0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"]},
        "kind": {"type": "string",
                 "pattern": r"^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?/[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$"},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "containerEdits": _EDITS,
        "devices": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name", "containerEdits"], "additionalProperties": False,
            "properties": {"name": {"type": "string", "pattern": _NAME},
                           "annotations": {"type": "object"}, "containerEdits": {**_EDITS, "minProperties": 1}}}},
    },
}


#: The hooks nvidia-container-toolkit v1.20.0's nvidia-cdi-hook runs (commands.go); others only log a warning.
_RUN_BY_NVIDIA_CDI_HOOK = ("update-ldcache", "create-symlinks", "chmod", "enable-cuda-compat",
                           "disable-device-node-modification", "update-application-profile")


def _minors(table: dict[str, int] | None = None) -> Any:
    return lambda: table if table is not None else {
        f"gpu{g}/gi{i}{ci}/access": g * 100 + i * 2 + bool(ci) for g in range(8) for i in range(15)
        for ci in ("", "/ci0")}


def _resources(profile: str, settings: Settings) -> Any:
    nvml = open_nvml(f"fake:{profile}")
    try:
        return nvml.devices(), build_resources(nvml.devices(), settings)
    finally:
        nvml.close()


def _valid(spec: dict[str, Any]) -> None:
    jsonschema.validate(spec, CDI_SCHEMA)
    assert spec_problems(spec) == []


@pytest.fixture
def nodes_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Device nodes can be made; the process's XDG_DATA_DIRS is cleared so configs are looked up where NVIDIA's are."""
    if not can_make_device_nodes():
        pytest.skip("creating character device nodes (mknod) is not permitted here")
    monkeypatch.delenv("XDG_DATA_DIRS", raising=False)


@pytest.fixture
def driver(tmp_path: Path, nodes_allowed: None) -> FakeDriverRoot:
    """Eight GPUs' driver root, without DRM nodes."""
    return make_driver_root(tmp_path / "root", minors=tuple(range(8)))


@pytest.fixture
def h100(tmp_path: Path, nodes_allowed: None) -> tuple[FakeDriverRoot, list[Any]]:
    """The driver root of the `h100-8x` profile's GPUs with their DRM nodes (by their bus ids), and the GPUs."""
    nvml = open_nvml("fake:h100-8x")
    try:
        gpus = nvml.devices()
    finally:
        nvml.close()
    root = make_driver_root(tmp_path / "drm", minors=tuple(g.minor_number for g in gpus),
                            bus_ids=tuple(g.pci.bus_id for g in gpus))
    return root, gpus


def _on(driver: FakeDriverRoot, **values: Any) -> Settings:
    """Settings of a plugin that sees the driver root at `driver.root`, which the host calls /run/nvidia/driver."""
    return Settings(driver_root="/run/nvidia/driver", driver_root_ctr_path=str(driver.root),
                    dev_root_ctr_path=str(driver.root), **values)


def test_full_gpus_by_uuid_index_and_all_with_the_control_nodes_that_exist(driver: FakeDriverRoot) -> None:
    (driver.root / "dev" / "nvidia-modeset").unlink()
    (driver.root / "dev" / "nvidia-uvm-tools").unlink()
    settings = _on(driver)
    gpus, resources = _resources("h100-8x", settings)
    spec = gpu_spec(resources, settings, _minors())
    _valid(spec)
    assert (spec["cdiVersion"], spec["kind"]) == ("0.5.0", "k8s.device-plugin.nvidia.com/gpu")
    names = [d["name"] for d in spec["devices"]]
    assert names == [n for g in gpus for n in (g.uuid, str(g.index))] + ["all"]
    first = spec["devices"][0]["containerEdits"]
    minor = gpus[0].minor_number
    assert first["deviceNodes"] == [{"path": f"/dev/nvidia{minor}", "hostPath": f"/run/nvidia/driver/dev/nvidia{minor}"}]
    every = [n["path"] for n in spec["devices"][-1]["containerEdits"]["deviceNodes"]]
    assert every == [f"/dev/nvidia{g.minor_number}" for g in gpus]
    assert spec["containerEdits"]["deviceNodes"] == [
        {"path": "/dev/nvidia-uvm", "hostPath": "/run/nvidia/driver/dev/nvidia-uvm"},
        {"path": "/dev/nvidiactl", "hostPath": "/run/nvidia/driver/dev/nvidiactl"}]
    assert "NVIDIA_VISIBLE_DEVICES=void" in spec["containerEdits"]["env"]


def test_the_spec_injects_the_driver_files_and_hooks_nvidia_does(driver: FakeDriverRoot) -> None:
    """Issue 20 item 1: the spec held device nodes only; NVIDIA's mounts the driver and adds the toolkit's hooks.

    Follows nvidia-container-toolkit v1.20.0 pkg/nvcdi/driver-nvml.go (newDriverVersionDiscoverer,
    NewDriverLibraryDiscoverer, getVersionLibs, newDriverFirmwareDiscoverer, newDriverBinariesDiscoverer),
    pkg/nvcdi/common-nvml.go (newCommonNVMLDiscoverer), pkg/nvcdi/wrapper.go (GetCommonEdits),
    pkg/nvcdi/full-gpu-nvml.go (newFullGPUDiscoverer), internal/discover/{ipc.go NewIPCDiscoverer,
    symlinks.go getLinksForMount/getDotSoSymlinks, ldconfig.go NewLDCacheUpdateHook, graphics.go
    NewGraphicsMountsDiscoverer, hooks.go cdiHookCreator.Create}. Issue 27 item 9: every hook is one v1.20.0's
    `nvidia-cdi-hook` runs (cmd/nvidia-cdi-hook/commands/commands.go ConfigureCDIHookCommand); the
    `apply-cuda-memory-limits` hook, which it does not know, is gone.
    """
    settings = _on(driver, nvidia_cdi_hook_path="/usr/local/nvidia/toolkit/nvidia-cdi-hook")
    gpus, resources = _resources("t4-1x", settings)
    spec = gpu_spec(resources, settings, _minors())
    _valid(spec)
    common = spec["containerEdits"]
    v, lib = driver.version, "/usr/lib/x86_64-linux-gnu"
    mounts = {m["containerPath"]: m for m in common["mounts"]}
    libraries = {f"{lib}/{name}" for name in (
        f"libcuda.so.{v}", f"libnvidia-ml.so.{v}", f"libnvidia-ptxjitcompiler.so.{v}", f"libcudadebugger.so.{v}",
        f"libnvidia-nvvm.so.{v}", f"libnvidia-cfg.so.{v}", f"libnvidia-opencl.so.{v}", f"libnvidia-gpucomp.so.{v}",
        f"libnvidia-allocator.so.{v}", f"libnvidia-vulkan-producer.so.{v}", f"libGLX_nvidia.so.{v}",
        f"libnvidia-opticalflow.so.{v}", "libnvidia-egl-gbm.so.1.1.2", "libnvidia-nvvm70.so.4",
        f"vdpau/libvdpau_nvidia.so.{v}")}
    programs = {f"/usr/bin/{p}" for p in ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                                          "nvidia-cuda-mps-control", "nvidia-cuda-mps-server")}
    firmware = {f"/lib/firmware/nvidia/{v}/gsp_ga10x.bin", f"/lib/firmware/nvidia/{v}/gsp_tu10x.bin"}
    configs = {"/usr/share/glvnd/egl_vendor.d/10_nvidia.json", "/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json",
               "/etc/vulkan/icd.d/nvidia_icd.json", "/etc/vulkan/implicit_layer.d/nvidia_layers.json",
               "/etc/OpenCL/vendors/nvidia.icd"}
    assert set(mounts) == libraries | programs | firmware | configs | {
        "/run/nvidia-persistenced/socket", "/var/run/nvidia-container-devices/void"}
    assert mounts[f"{lib}/libcuda.so.{v}"] == {"hostPath": f"/run/nvidia/driver{lib}/libcuda.so.{v}",
                                               "containerPath": f"{lib}/libcuda.so.{v}",
                                               "options": ["ro", "nosuid", "nodev", "rbind", "rprivate"]}
    assert mounts["/run/nvidia-persistenced/socket"]["options"] == ["nosuid", "nodev", "rbind", "rprivate", "noexec"]
    assert mounts["/etc/vulkan/icd.d/nvidia_icd.json"]["hostPath"] == (
        "/run/nvidia/driver/usr/share/vulkan/icd.d/nvidia_icd.json")
    assert common["env"] == [f"NVIDIA_CTK_LIBCUDA_DIR={lib}", "NVIDIA_VISIBLE_DEVICES=void"]
    hooks = [h["args"] for h in common["hooks"]]
    assert {h["path"] for h in common["hooks"]} == {"/usr/local/nvidia/toolkit/nvidia-cdi-hook"}
    assert [a[1] for a in hooks] == ["create-symlinks", "create-symlinks", "enable-cuda-compat", "update-ldcache",
                                     "disable-device-node-modification", "update-application-profile"]
    links = set(hooks[0][3::2]) | set(hooks[1][3::2])
    assert {f"libcuda.so.1::{lib}/libcuda.so", f"libcuda.so.{v}::{lib}/libcuda.so.1",
            f"libnvidia-ml.so.{v}::{lib}/libnvidia-ml.so.1", f"libnvidia-ml.so.1::{lib}/libnvidia-ml.so",
            f"libnvidia-nvvm.so.{v}::{lib}/libnvidia-nvvm.so.4",
            f"libvdpau_nvidia.so.{v}::{lib}/vdpau/libvdpau_nvidia.so.1",
            f"libGLX_nvidia.so.{v}::{lib}/libGLX_indirect.so.0",
            f"../libnvidia-allocator.so.1::{lib}/gbm/nvidia-drm_gbm.so"} <= links
    assert f"libnvidia-gpucomp.so.{v}::{lib}/libnvidia-gpucomp.so.{v}" not in links
    assert hooks[2] == ["nvidia-cdi-hook", "enable-cuda-compat", f"--host-driver-version={v}"]
    assert hooks[3] == ["nvidia-cdi-hook", "update-ldcache", "--folder", lib, "--folder", f"{lib}/vdpau"]
    device = spec["devices"][0]["containerEdits"]
    assert "hooks" not in device, "no DRM nodes here, so no by-path links to make"
    every_hook = [h for e in (common, *(d["containerEdits"] for d in spec["devices"])) for h in e.get("hooks", [])]
    assert {h["args"][1] for h in every_hook} <= set(_RUN_BY_NVIDIA_CDI_HOOK)
    assert {h["hookName"] for h in every_hook} == {"createContainer"}


def test_a_driver_root_without_a_driver_is_a_clear_error(tmp_path: Path) -> None:
    settings = Settings(driver_root_ctr_path=str(tmp_path), device_list_strategy=(ListStrategy.CDI_CRI,))
    _, resources = _resources("t4-1x", settings)
    with pytest.raises(DeviceError, match=r"no libcuda.so.<version> .*--driver-root-ctr-path \(DRIVER_ROOT_CTR_PATH"):
        gpu_spec(resources, settings, _minors())


def test_mig_devices_bring_their_access_capabilities_and_replicas_collapse(tmp_path: Path,
                                                                          driver: FakeDriverRoot) -> None:
    nvml = open_nvml("fake:a100-8x-mig")
    try:
        gpus = nvml.devices()
    finally:
        nvml.close()
    migs = [(g, m) for g in gpus for m in g.mig_devices]
    root = make_driver_root(tmp_path / "mig", minors=tuple(g.minor_number for g in gpus), mig_instances=tuple(
        (g.minor_number, m.gpu_instance_id, m.compute_instance_id) for g, m in migs))
    settings = Settings(mig_strategy=MigStrategy.SINGLE, driver_root_ctr_path=str(root.root),
                        dev_root_ctr_path=str(root.root))
    _, resources = _resources("a100-8x-mig", settings)
    spec = gpu_spec(resources, settings, lambda: root.caps)
    _valid(spec)
    by_name = {d["name"]: d["containerEdits"] for d in spec["devices"]}
    assert len(by_name) == 2 * len(migs) + 1
    gpu, mig = migs[0]
    gi = f"gpu{gpu.minor_number}/gi{mig.gpu_instance_id}"
    assert [n["path"] for n in by_name[mig.uuid]["deviceNodes"]] == [
        f"/dev/nvidia{gpu.minor_number}", f"/dev/nvidia-caps/nvidia-cap{root.caps[gi + '/access']}",
        f"/dev/nvidia-caps/nvidia-cap{root.caps[f'{gi}/ci{mig.compute_instance_id}/access']}"]
    assert by_name[f"{mig.parent_index}:{mig.index}"] == by_name[mig.uuid]
    assert "hooks" not in by_name[mig.uuid]
    assert "additionalGids" not in by_name[mig.uuid], "root's nodes (0444 capabilities) need no extra group"


def test_mig_capabilities_are_those_of_the_parent_minor_not_the_nvml_index(driver: FakeDriverRoot,
                                                                            tmp_path: Path) -> None:
    """Issue 20 item 2: the capability nodes were looked up by NVML index, NVIDIA's by the parent's minor.

    Follows nvidia-container-toolkit v1.20.2 internal/platform-support/dgpu/nvml.go (toRequiredMigInfo
    getPlacementInfo: the GPU of `gpu<N>/gi<G>/access` is the parent's GetMinorNumber) and k8s-device-plugin v0.20.0
    internal/rm/nvml_devices.go (nvmlMigDevice.GetPaths).
    """
    root = make_driver_root(tmp_path / "other", minors=(3,), mig_instances=((3, 1, 0),))
    settings = Settings(mig_strategy=MigStrategy.SINGLE, driver_root_ctr_path=str(root.root),
                        dev_root_ctr_path=str(root.root), proc_root=str(root.proc_root))
    mig = PluginDevice("MIG-x", "MIG-x", "0:0", 0, "GPU-x", 3, None, gpu_instance_id=1, compute_instance_id=0)
    index_table = {**root.caps, "gpu0/gi1/access": 1, "gpu0/gi1/ci0/access": 2}
    spec = gpu_spec([Resource("nvidia.com/gpu", (mig,))], settings, lambda: index_table)
    _valid(spec)
    nodes = [n["path"] for n in spec["devices"][0]["containerEdits"]["deviceNodes"]]
    assert nodes == ["/dev/nvidia3", f"/dev/nvidia-caps/nvidia-cap{root.caps['gpu3/gi1/access']}",
                     f"/dev/nvidia-caps/nvidia-cap{root.caps['gpu3/gi1/ci0/access']}"]


def test_a_mig_device_without_its_capability_minor_is_a_clear_error(driver: FakeDriverRoot) -> None:
    settings = _on(driver, mig_strategy=MigStrategy.SINGLE)
    _, resources = _resources("a100-8x-mig", settings)
    with pytest.raises(DeviceError, match=r"no capability device for MIG device 0:0 \(gpu0/gi\d+/access"):
        gpu_spec(resources, settings, _minors({}))


def _drm_spec(root: FakeDriverRoot, **values: Any) -> dict[str, Any]:
    settings = _on(root, **values)
    _, resources = _resources("h100-8x", settings)
    spec = gpu_spec(resources, settings, _minors(), layout_for(settings, str(root.sys_root)))
    _valid(spec)
    return spec


def _hook_names(edits: dict[str, Any]) -> list[str]:
    """The hooks' names: the argument after `nvidia-ctk hook` or `nvidia-cdi-hook`."""
    return [h["args"][2 if h["args"][0] == "nvidia-ctk" else 1] for h in edits.get("hooks", [])]


def test_full_gpus_bring_their_drm_nodes_and_by_path_links(h100: tuple[FakeDriverRoot, list[Any]]) -> None:
    """Issue 27 item 9: a full GPU's DRM nodes, found by its PCI bus id, and the hook of their by-path links.

    Follows nvidia-container-toolkit v1.20.0 pkg/nvcdi/full-gpu-nvml.go (newFullGPUDiscoverer),
    internal/platform-support/dgpu/nvml.go (newNvmlDGPUDiscoverer), internal/info/drm/drm_devices.go
    (GetDeviceNodesByBusID), internal/platform-support/dgpu/by-path-hooks.go (deviceNodeLinks),
    internal/edits/device.go (getAdditionalGIDs: the `video` group of a 0660 card node, none for a 0666 render
    node) and go-nvlib v0.12.0 pkg/nvlib/device/device.go (GetPCIBusID).
    """
    root, gpus = h100
    spec = _drm_spec(root)
    assert spec["cdiVersion"] == "0.7.0", "additionalGids need CDI 0.7.0 (specs-go/version.go requiresV070)"
    by_name = {d["name"]: d["containerEdits"] for d in spec["devices"]}
    first = gpus[0]
    bus = sysfs_bus_id(first.pci.bus_id)
    card, render = root.drm[first.minor_number]
    edits = by_name[first.uuid]
    assert edits["deviceNodes"] == [
        {"path": f"/dev/nvidia{first.minor_number}", "hostPath": f"/run/nvidia/driver/dev/nvidia{first.minor_number}"},
        {"path": card, "hostPath": f"/run/nvidia/driver{card}"},
        {"path": render, "hostPath": f"/run/nvidia/driver{render}"}]
    assert edits["additionalGids"] == [VIDEO_GID]
    assert edits["hooks"] == [{"hookName": "createContainer", "path": "/usr/bin/nvidia-ctk", "args": [
        "nvidia-ctk", "hook", "create-symlinks",
        "--link", f"../{card.rsplit('/', 1)[1]}::/dev/dri/by-path/pci-{bus}-card",
        "--link", f"../{render.rsplit('/', 1)[1]}::/dev/dri/by-path/pci-{bus}-render"],
        "env": ["NVIDIA_CTK_DEBUG=false"]}]
    assert by_name[str(first.index)] == edits
    every = [n["path"] for n in by_name["all"]["deviceNodes"]]
    assert every == [p for g in gpus for p in (f"/dev/nvidia{g.minor_number}", *root.drm[g.minor_number])]
    assert len(by_name["all"]["hooks"]) == len(gpus)
    assert "/dev/dri/card0" not in json.dumps(spec), "the BMC's display device belongs to no GPU"


def test_feature_flags_shape_the_spec_as_nvcdis(h100: tuple[FakeDriverRoot, list[Any]]) -> None:
    """Issue 27 item 9: CDI_FEATURE_FLAGS, passed by k8s-device-plugin v0.20.0 internal/cdi/cdi.go `New` to
    nvcdi.WithFeatureFlags; nvidia-container-toolkit v1.20.0 pkg/nvcdi/options.go
    (edits.WithNoAdditionalGIDsForDeviceNodes), driver-nvml.go (newIPCDiscoverer: disable-ipc-discoverer;
    getExplicitDriverLibraryMounts: enable-explicit-driver-libraries, looked up in the driver's library
    directories, symlinks resolved)."""
    root, _ = h100
    (root.lib_dir / "libEGL.so.1.1.0").write_bytes(b"\x7fELF")
    (root.lib_dir / "libEGL.so").symlink_to("libEGL.so.1.1.0")
    plain = _drm_spec(root)
    mounts = {m["containerPath"] for m in plain["containerEdits"]["mounts"]}
    assert "/run/nvidia-persistenced/socket" in mounts
    assert not any("libEGL" in m for m in mounts)
    flagged = _drm_spec(root, cdi_feature_flags=frozenset({
        "no-additional-gids-for-device-nodes", "disable-ipc-discoverer", "enable-explicit-driver-libraries"}))
    assert flagged["cdiVersion"] == "0.5.0"
    assert not any("additionalGids" in d["containerEdits"] for d in flagged["devices"])
    mounts = {m["containerPath"] for m in flagged["containerEdits"]["mounts"]}
    assert "/run/nvidia-persistenced/socket" not in mounts
    assert "/usr/lib/x86_64-linux-gnu/libEGL.so.1.1.0" in mounts


def test_disabled_hooks_are_left_out_of_every_device(h100: tuple[FakeDriverRoot, list[Any]]) -> None:
    """Issue 27 item 9: CDI_DISABLE_HOOKS (k8s-device-plugin v0.20.0 cmd/nvidia-device-plugin/main.go
    `cdi-disable-hooks`, internal/cdi/cdi.go `New` nvcdi.WithDisabledHooks; nvidia-container-toolkit v1.20.0
    internal/discover/hooks.go NewHookCreator, isDisabled)."""
    root, gpus = h100
    spec = _drm_spec(root, cdi_disable_hooks=frozenset({"create-symlinks"}))
    names = [n for e in (spec["containerEdits"], *(d["containerEdits"] for d in spec["devices"]))
             for n in _hook_names(e)]
    assert "create-symlinks" not in names and "update-ldcache" in names
    bare = _drm_spec(root, cdi_disable_hooks=frozenset({"all"}))
    assert not any("hooks" in e for e in (bare["containerEdits"], *(d["containerEdits"] for d in bare["devices"])))
    assert [n["path"] for n in bare["devices"][0]["containerEdits"]["deviceNodes"]][1:] == list(
        root.drm[gpus[0].minor_number])


@pytest.mark.parametrize(("profile", "with_drm"), [("1g.12gb+gfx", True), ("1g.12gb", False), ("1g.12gb+me", False)])
def test_a_mig_device_with_graphics_brings_its_parents_drm_nodes(tmp_path: Path, nodes_allowed: None, profile: str,
                                                                  with_drm: bool) -> None:
    """Issue 27 item 9: nvidia-container-toolkit v1.20.0 internal/platform-support/dgpu/nvml.go
    (newNvmlMigDiscoverer: with the profile attribute `gfx`, the parent's DRM nodes and by-path hook;
    go-nvlib v0.12.0 pkg/nvlib/device/mig_profile.go AttributeGraphics, MigProfileInfo.String)."""
    root = make_driver_root(tmp_path / "mig", minors=(3,), mig_instances=((3, 1, 0),), bus_ids=("00000000:3B:00.0",))
    settings = Settings(mig_strategy=MigStrategy.SINGLE, driver_root_ctr_path=str(root.root),
                        dev_root_ctr_path=str(root.root))
    mig = PluginDevice("MIG-x", "MIG-x", "0:0", 0, "GPU-x", 3, None, gpu_instance_id=1, compute_instance_id=0,
                       pci_bus_id="00000000:3B:00.0", mig_profile=profile)
    spec = gpu_spec([Resource("nvidia.com/gpu", (mig,))], settings, lambda: root.caps,
                    layout_for(settings, str(root.sys_root)))
    _valid(spec)
    edits = spec["devices"][0]["containerEdits"]
    drm = [n["path"] for n in edits["deviceNodes"] if n["path"].startswith("/dev/dri/")]
    assert drm == (list(root.drm[3]) if with_drm else [])
    assert _hook_names(edits) == (["create-symlinks"] if with_drm else [])


def test_replicated_gpus_are_named_once_per_physical_device(driver: FakeDriverRoot) -> None:
    from gpu_operator.agents.plugin_config import parse_plugin_config

    config = parse_plugin_config("sharing:\n  timeSlicing:\n    resources: [{name: gpu, replicas: 4}]\n")
    settings = _on(driver, plugin_config=config, device_id_strategy=IdStrategy.INDEX)
    gpus, resources = _resources("h100-8x", settings)
    assert len(resources[0].devices) == 32
    spec = gpu_spec(resources, settings, _minors())
    _valid(spec)
    assert len(spec["devices"]) == 2 * len(gpus) + 1


def test_no_specs_without_a_cdi_strategy_and_imex_and_features_with_one(driver: FakeDriverRoot) -> None:
    (driver.root / "dev" / "infiniband").mkdir(parents=True)
    for name in ("uverbs0", "rdma_cm"):
        (driver.root / "dev" / "infiniband" / name).touch()
    settings = _on(driver, mofed_enabled=True, imex_channel_ids=(0,))
    _, resources = _resources("h100-8x", settings)
    assert specs_for(resources, settings, _minors()) == {}
    cdi = _on(driver, mofed_enabled=True, imex_channel_ids=(0,), device_list_strategy=(ListStrategy.CDI_CRI,))
    specs = specs_for(resources, cdi, _minors())
    assert sorted(specs) == ["gpu", "imex-channel", "mofed"]
    for spec in specs.values():
        _valid(spec)
    assert specs["imex-channel"]["devices"] == [{"name": "0", "containerEdits": {"deviceNodes": [
        {"path": "/dev/nvidia-caps-imex-channels/channel0",
         "hostPath": "/run/nvidia/driver/dev/nvidia-caps-imex-channels/channel0"}]}}]
    assert [n["path"] for n in specs["mofed"]["devices"][0]["containerEdits"]["deviceNodes"]] == [
        "/dev/infiniband/rdma_cm", "/dev/infiniband/uverbs0"]
    assert specs["mofed"]["cdiVersion"] == "0.5.0"


def test_specs_are_written_as_nvidias_files_and_stale_classes_removed(tmp_path: Path, driver: FakeDriverRoot) -> None:
    """Issue 27 item 1: each class's spec is `<vendor>-<class>.json`, JSON in the Go types' field order, as
    k8s-device-plugin v0.20.0 internal/cdi/cdi.go `CreateSpecFile` saves it (container-device-interface v1.1.0
    pkg/cdi/spec.go GenerateNameForSpec, (*Spec).write: json.Marshal for a `.json` path); nvcdi's spec files are
    0644 (nvidia-container-toolkit v1.20.0 pkg/nvcdi/spec/builder.go)."""
    cdi_dir = tmp_path / "cdi"
    settings = _on(driver, imex_channel_ids=(0,), cdi_spec_dir=str(cdi_dir),
                   device_list_strategy=(ListStrategy.CDI_ANNOTATIONS,))
    _, resources = _resources("t4-1x", settings)
    written = write_specs(resources, settings, _minors())
    assert written == {"gpu": spec_path(str(cdi_dir), "gpu"), "imex-channel": spec_path(str(cdi_dir), "imex-channel")}
    assert sorted(os.listdir(cdi_dir)) == ["k8s.device-plugin.nvidia.com-gpu.json",
                                           "k8s.device-plugin.nvidia.com-imex-channel.json"]
    text = (cdi_dir / "k8s.device-plugin.nvidia.com-gpu.json").read_text()
    on_disk = json.loads(text)
    _valid(on_disk)
    assert on_disk == gpu_spec(resources, settings, _minors())
    assert list(on_disk) == ["cdiVersion", "kind", "devices", "containerEdits"]
    assert list(on_disk["containerEdits"]) == ["env", "deviceNodes", "hooks", "mounts"]
    assert text == json.dumps(on_disk, separators=(",", ":")), "compact, as Go's json.Marshal writes it"
    assert (cdi_dir / "k8s.device-plugin.nvidia.com-gpu.json").stat().st_mode & 0o777 == 0o644
    unrelated = cdi_dir / "nvidia.yaml"
    unrelated.write_text("kept")
    write_specs(resources, _on(driver, cdi_spec_dir=str(cdi_dir), device_list_strategy=(ListStrategy.CDI_CRI,)),
                _minors())
    assert sorted(os.listdir(cdi_dir)) == ["k8s.device-plugin.nvidia.com-gpu.json", "nvidia.yaml"]


def _nvidia_plugin_writes(spec_dir: Path, spec: dict[str, Any]) -> Path:
    """NVIDIA's device plugin saving a spec (k8s-device-plugin v0.20.0 internal/cdi/cdi.go `CreateSpecFile`,
    container-device-interface v1.1.0 pkg/cdi/cache.go WriteSpec, spec.go (*Spec).write: a `spec.*.tmp` file
    renamed over the target)."""
    path = nvidia_spec_file(spec_dir, spec["kind"])
    temporary = spec_dir / "spec.12345.tmp"
    temporary.write_text(json.dumps(spec))
    os.replace(temporary, path)
    return path


def _names(gpus: list[Any]) -> set[str]:
    return {f"k8s.device-plugin.nvidia.com/gpu={n}" for g in gpus for n in (g.uuid, str(g.index))} | {
        "k8s.device-plugin.nvidia.com/gpu=all"}


def test_the_cache_model_drops_a_device_two_specs_of_one_directory_define(tmp_path: Path) -> None:
    """The rule the coexistence tests rely on (container-device-interface v1.1.0 pkg/cdi/cache.go `refresh`,
    resolveConflict; spec-dirs.go scanSpecDirs): two specs of one directory defining a name drop it; a later
    directory (`/var/run/cdi` after `/etc/cdi`) overrides an earlier one without an error."""
    etc, run = tmp_path / "etc-cdi", tmp_path / "run-cdi"
    spec = {"cdiVersion": "0.3.0", "kind": "k8s.device-plugin.nvidia.com/gpu",
            "devices": [{"name": "a", "containerEdits": {"env": ["A=1"]}}]}
    for path in (etc / "x.yaml", run / "x.json", run / "y.yaml"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(spec))
    (run / "z.json.tmp").write_text("not read")
    cache = load_cache([etc, run])
    assert cache.devices == {}
    assert sorted(cache.errors) == [run / "x.json", run / "y.yaml"]
    assert "conflicting device 'k8s.device-plugin.nvidia.com/gpu=a'" in cache.errors[run / "x.json"][0]
    (run / "y.yaml").unlink()
    assert load_cache([etc, run]) == CdiCache({"k8s.device-plugin.nvidia.com/gpu=a": run / "x.json"}, {})


def test_a_leftover_nvidia_spec_is_replaced_when_our_plugin_starts(tmp_path: Path, driver: FakeDriverRoot) -> None:
    """Issue 27 item 1, NVIDIA's plugin then ours: NVIDIA's plugin never removes its spec (k8s-device-plugin
    v0.20.0 internal/cdi/cdi.go `CreateSpecFile` writes it, nothing deletes it); ours writes the same file, and the
    `.yaml` of our earlier versions, which made every device a conflict (container-device-interface v1.1.0
    pkg/cdi/cache.go `refresh`), is removed."""
    spec_dir = tmp_path / "run-cdi"
    spec_dir.mkdir()
    settings = _on(driver, imex_channel_ids=(0,), cdi_spec_dir=str(spec_dir),
                   device_list_strategy=(ListStrategy.CDI_CRI,))
    gpus, resources = _resources("h100-8x", settings)
    theirs = specs_for(resources, _on(driver, imex_channel_ids=(0,), nvidia_cdi_hook_path="/opt/nvidia-ctk",
                                      device_list_strategy=(ListStrategy.CDI_CRI,)), _minors())
    leftovers = {_nvidia_plugin_writes(spec_dir, spec) for spec in theirs.values()}
    (spec_dir / "k8s.device-plugin.nvidia.com-gpu.yaml").write_text(json.dumps(theirs["gpu"]))
    before = load_cache([tmp_path / "etc-cdi", spec_dir])
    assert not _names(gpus) & set(before.devices), "the break: two specs, every GPU name dropped"
    write_specs(resources, settings, _minors())
    assert set(spec_dir.iterdir()) == leftovers
    after = load_cache([tmp_path / "etc-cdi", spec_dir])
    assert after.errors == {}
    assert {n for n in after.devices if "/gpu=" in n} == _names(gpus)
    assert after.devices["k8s.device-plugin.nvidia.com/imex-channel=0"].name.endswith("-imex-channel.json")
    assert json.loads(nvidia_spec_file(spec_dir, "k8s.device-plugin.nvidia.com/gpu").read_text()) == gpu_spec(
        resources, settings, _minors()), "the spec on disk is ours"


def test_nvidias_plugin_starting_after_ours_replaces_our_spec(tmp_path: Path, driver: FakeDriverRoot) -> None:
    """Issue 27 item 1, ours then NVIDIA's plugin: NVIDIA's saves its spec at the name ours wrote
    (k8s-device-plugin v0.20.0 internal/cdi/cdi.go `CreateSpecFile`), replacing it, so every device keeps one
    definition (container-device-interface v1.1.0 pkg/cdi/cache.go `refresh`)."""
    spec_dir = tmp_path / "run-cdi"
    settings = _on(driver, cdi_spec_dir=str(spec_dir), device_list_strategy=(ListStrategy.CDI_CRI,))
    gpus, resources = _resources("h100-8x", settings)
    ours = write_specs(resources, settings, _minors())
    theirs = gpu_spec(resources, _on(driver, nvidia_cdi_hook_path="/opt/nvidia-ctk"), _minors())
    path = _nvidia_plugin_writes(spec_dir, theirs)
    assert [path] == [Path(ours["gpu"])] == list(spec_dir.iterdir())
    cache = load_cache([tmp_path / "etc-cdi", spec_dir])
    assert cache.errors == {}
    assert set(cache.devices) == _names(gpus)
    assert json.loads(path.read_text()) == theirs


def test_an_unwritable_spec_directory_is_a_clear_error(tmp_path: Path, driver: FakeDriverRoot) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    settings = _on(driver, cdi_spec_dir=str(blocker / "cdi"), device_list_strategy=(ListStrategy.CDI_CRI,))
    _, resources = _resources("t4-1x", settings)
    with pytest.raises(DeviceError, match="cannot write the CDI specs in .*file/cdi"):
        write_specs(resources, settings, _minors())


def test_the_version_is_the_lowest_the_content_needs() -> None:
    letter = {"kind": "v.com/c", "devices": [{"name": "a", "containerEdits": {"env": ["A=1"]}}]}
    assert minimum_version(letter) == "0.3.0"
    digit = copy.deepcopy(letter)
    digit["devices"][0]["name"] = "0"
    assert minimum_version(digit) == "0.5.0"
    host = copy.deepcopy(letter)
    host["devices"][0]["containerEdits"] = {"deviceNodes": [{"path": "/dev/x", "hostPath": "/h/dev/x"}]}
    assert minimum_version(host) == "0.5.0"
    assert minimum_version({**letter, "kind": "v.com/c.d"}) == "0.6.0"


#: Rules a JSON schema cannot state: which version a field needs, names unique by a key.
_BEYOND_A_SCHEMA = ("too old", "defined twice")


def _broken(change: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"cdiVersion": "0.5.0", "kind": "k8s.device-plugin.nvidia.com/gpu", "devices": [
        {"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "/dev/nvidia0"}]}}]}
    change(spec)
    return spec


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda s: s.update(cdiVersion="0.9.1"), "cdiVersion '0.9.1' is not a released CDI version"),
        (lambda s: s.update(cdiVersion="0.4.0"), "cdiVersion 0.4.0 is too old for the spec's content (needs 0.5.0)"),
        (lambda s: s.update(kind="nvidia.com"), "kind 'nvidia.com' is not <vendor>/<class>"),
        (lambda s: s.update(kind="1nvidia.com/gpu"), "kind '1nvidia.com/gpu' is not <vendor>/<class>"),
        (lambda s: s.update(devices=[]), "devices must be a non-empty list"),
        (lambda s: s["devices"].append(copy.deepcopy(s["devices"][0])), "devices[1].name '0' is defined twice"),
        (lambda s: s["devices"][0].update(name="MIG-GPU-1/2/0"), "devices[0].name 'MIG-GPU-1/2/0' is not a CDI"),
        (lambda s: s["devices"][0].update(containerEdits={}), "devices[0] (0) has no container edits"),
        (lambda s: s["devices"][0]["containerEdits"]["deviceNodes"][0].update(path="dev/nvidia0"),
         "deviceNodes[0].path must be an absolute path"),
        (lambda s: s["devices"][0]["containerEdits"].update(env=["no-equals"]), "env[0] 'no-equals' is not NAME=VALUE"),
        (lambda s: s["devices"][0]["containerEdits"].update(mounts=[{"hostPath": "/x"}]),
         "mounts[0] needs hostPath and containerPath"),
        (lambda s: s.update(extra=1), "extra: not a CDI spec field"),
    ],
)
def test_each_cdi_rule_refuses_a_spec_that_breaks_it(change: Any, problem: str) -> None:
    spec = _broken(change)
    problems = spec_problems(spec)
    assert any(problem in p for p in problems), problems
    if any(rule in problem for rule in _BEYOND_A_SCHEMA):
        return
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(spec, CDI_SCHEMA)
