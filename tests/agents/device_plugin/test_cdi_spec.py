"""CDI specs for the devices the CDI strategies name: their content, the CDI rules they follow, and their files.

The `gpu` specs are made from a driver root laid out like a real installation (tests/support/fake_driver_root.py),
and must hold what NVIDIA's toolkit injects from it (the e2e tier compares them with `nvidia-ctk cdi generate`).
`CDI_SCHEMA` is our own JSON schema of a CDI spec, written from the CDI specification's field list and name rules
(vendor and class start with a letter; device names start with a letter or digit; `path`, `hostPath` and
`containerPath` are the required fields of device nodes and mounts); every generated spec must satisfy it and
:func:`spec_problems`, and each rule of :func:`spec_problems` is shown refusing a spec that breaks it.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from gpu_operator.agents.device_plugin.cdi_spec import (
    gpu_spec,
    minimum_version,
    spec_path,
    spec_problems,
    specs_for,
    write_specs,
)
from gpu_operator.agents.device_plugin.devices import DeviceError, PluginDevice, Resource, build_resources
from gpu_operator.agents.device_plugin.settings import IdStrategy, ListStrategy, MigStrategy, Settings
from gpu_operator.agents.nvml import open_nvml
from tests.support.fake_driver_root import FakeDriverRoot, can_make_device_nodes, make_driver_root

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
    "hooks": {"type": "array"}, "intelRdt": {"type": "object"}, "additionalGIDs": {"type": "array"}}}
CDI_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["cdiVersion", "kind", "devices"],
    "additionalProperties": False,
    "properties": {
        "cdiVersion": {"enum": ["0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0"]},
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
def driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeDriverRoot:
    """Eight GPUs' driver root; the process's XDG_DATA_DIRS is cleared so configs are looked up where NVIDIA's are."""
    if not can_make_device_nodes():
        pytest.skip("creating character device nodes (mknod) is not permitted here")
    monkeypatch.delenv("XDG_DATA_DIRS", raising=False)
    return make_driver_root(tmp_path / "root", minors=tuple(range(8)))


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

    Follows nvidia-container-toolkit v1.20.2 pkg/nvcdi/driver-nvml.go (newDriverVersionDiscoverer,
    NewDriverLibraryDiscoverer, getVersionLibs, newDriverFirmwareDiscoverer, newDriverBinariesDiscoverer),
    pkg/nvcdi/common-nvml.go (newCommonNVMLDiscoverer), pkg/nvcdi/wrapper.go (GetCommonEdits),
    pkg/nvcdi/full-gpu-nvml.go (newFullGPUDiscoverer), pkg/nvcdi/cuda-memory-limits.go,
    internal/discover/{ipc.go NewIPCDiscoverer, symlinks.go getLinksForMount/getDotSoSymlinks,
    ldconfig.go NewLDCacheUpdateHook, graphics.go NewGraphicsMountsDiscoverer, hooks.go cdiHookCreator.Create}.
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
    assert device["hooks"] == [{"hookName": "createRuntime", "path": "/usr/local/nvidia/toolkit/nvidia-cdi-hook",
                                "args": ["nvidia-cdi-hook", "apply-cuda-memory-limits", "--driver-root",
                                         "/run/nvidia/driver", "--gpu-id", gpus[0].uuid],
                                "env": ["NVIDIA_CTK_DEBUG=false"]}]


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


def test_specs_are_written_as_files_and_stale_classes_removed(tmp_path: Path, driver: FakeDriverRoot) -> None:
    cdi_dir = tmp_path / "cdi"
    settings = _on(driver, imex_channel_ids=(0,), cdi_spec_dir=str(cdi_dir),
                   device_list_strategy=(ListStrategy.CDI_ANNOTATIONS,))
    _, resources = _resources("t4-1x", settings)
    written = write_specs(resources, settings, _minors())
    assert written == {"gpu": spec_path(str(cdi_dir), "gpu"), "imex-channel": spec_path(str(cdi_dir), "imex-channel")}
    assert sorted(os.listdir(cdi_dir)) == ["k8s.device-plugin.nvidia.com-gpu.yaml",
                                           "k8s.device-plugin.nvidia.com-imex-channel.yaml"]
    on_disk = yaml.safe_load((cdi_dir / "k8s.device-plugin.nvidia.com-gpu.yaml").read_text())
    _valid(on_disk)
    assert on_disk == gpu_spec(resources, settings, _minors())
    unrelated = cdi_dir / "nvidia.yaml"
    unrelated.write_text("kept")
    write_specs(resources, _on(driver, cdi_spec_dir=str(cdi_dir), device_list_strategy=(ListStrategy.CDI_CRI,)),
                _minors())
    assert sorted(os.listdir(cdi_dir)) == ["k8s.device-plugin.nvidia.com-gpu.yaml", "nvidia.yaml"]


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
