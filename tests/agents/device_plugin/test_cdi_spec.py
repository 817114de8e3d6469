"""CDI specs for the devices the CDI strategies name: their content, the CDI rules they follow, and their files.

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
from gpu_operator.agents.device_plugin.devices import DeviceError, build_resources
from gpu_operator.agents.device_plugin.settings import IdStrategy, ListStrategy, MigStrategy, Settings
from gpu_operator.agents.nvml import open_nvml

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


def test_full_gpus_by_uuid_index_and_all_with_the_control_nodes_that_exist(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "nvidiactl").touch()
    (tmp_path / "dev" / "nvidia-uvm").touch()
    settings = Settings(dev_root="/host", dev_root_ctr_path=str(tmp_path))
    gpus, resources = _resources("h100-8x", settings)
    spec = gpu_spec(resources, settings, _minors())
    _valid(spec)
    assert (spec["cdiVersion"], spec["kind"]) == ("0.5.0", "k8s.device-plugin.nvidia.com/gpu")
    names = [d["name"] for d in spec["devices"]]
    assert names == [n for g in gpus for n in (g.uuid, str(g.index))] + ["all"]
    first = spec["devices"][0]["containerEdits"]["deviceNodes"]
    minor = gpus[0].minor_number
    assert first == [{"path": f"/dev/nvidia{minor}", "hostPath": f"/host/dev/nvidia{minor}"}]
    every = [n["path"] for n in spec["devices"][-1]["containerEdits"]["deviceNodes"]]
    assert every == [f"/dev/nvidia{g.minor_number}" for g in gpus]
    assert spec["containerEdits"] == {
        "env": ["NVIDIA_VISIBLE_DEVICES=void"],
        "deviceNodes": [{"path": "/dev/nvidiactl", "hostPath": "/host/dev/nvidiactl"},
                        {"path": "/dev/nvidia-uvm", "hostPath": "/host/dev/nvidia-uvm"}]}


def test_mig_devices_bring_their_access_capabilities_and_replicas_collapse(tmp_path: Path) -> None:
    settings = Settings(mig_strategy=MigStrategy.SINGLE, dev_root=str(tmp_path))
    gpus, resources = _resources("a100-8x-mig", settings)
    migs = [m for g in gpus for m in g.mig_devices]
    spec = gpu_spec(resources, settings, _minors())
    _valid(spec)
    by_name = {d["name"]: d["containerEdits"]["deviceNodes"] for d in spec["devices"]}
    assert len(by_name) == 2 * len(migs) + 1
    mig = migs[0]
    gpu = gpus[mig.parent_index]
    cap = mig.parent_index * 100 + mig.gpu_instance_id * 2
    assert [n["path"] for n in by_name[mig.uuid]] == [
        f"/dev/nvidia{gpu.minor_number}", f"/dev/nvidia-caps/nvidia-cap{cap}", f"/dev/nvidia-caps/nvidia-cap{cap + 1}"]
    assert by_name[f"{mig.parent_index}:{mig.index}"] == by_name[mig.uuid]


def test_a_mig_device_without_its_capability_minor_is_a_clear_error() -> None:
    settings = Settings(mig_strategy=MigStrategy.SINGLE)
    _, resources = _resources("a100-8x-mig", settings)
    with pytest.raises(DeviceError, match=r"no capability device for MIG device 0:0 \(gpu0/gi\d+/access"):
        gpu_spec(resources, settings, _minors({}))


def test_replicated_gpus_are_named_once_per_physical_device() -> None:
    from gpu_operator.agents.plugin_config import parse_plugin_config

    config = parse_plugin_config("sharing:\n  timeSlicing:\n    resources: [{name: gpu, replicas: 4}]\n")
    settings = Settings(plugin_config=config, device_id_strategy=IdStrategy.INDEX)
    gpus, resources = _resources("h100-8x", settings)
    assert len(resources[0].devices) == 32
    spec = gpu_spec(resources, settings, _minors())
    _valid(spec)
    assert len(spec["devices"]) == 2 * len(gpus) + 1


def test_no_specs_without_a_cdi_strategy_and_imex_and_features_with_one(tmp_path: Path) -> None:
    (tmp_path / "dev" / "infiniband").mkdir(parents=True)
    for name in ("uverbs0", "rdma_cm"):
        (tmp_path / "dev" / "infiniband" / name).touch()
    settings = Settings(dev_root=str(tmp_path), mofed_enabled=True, imex_channel_ids=(0,))
    _, resources = _resources("h100-8x", settings)
    assert specs_for(resources, settings, _minors()) == {}
    cdi = Settings(dev_root=str(tmp_path), mofed_enabled=True, imex_channel_ids=(0,),
                   device_list_strategy=(ListStrategy.CDI_CRI,))
    specs = specs_for(resources, cdi, _minors())
    assert sorted(specs) == ["gpu", "imex-channel", "mofed"]
    for spec in specs.values():
        _valid(spec)
    assert specs["imex-channel"]["devices"] == [{"name": "0", "containerEdits": {"deviceNodes": [
        {"path": "/dev/nvidia-caps-imex-channels/channel0",
         "hostPath": f"{tmp_path}/dev/nvidia-caps-imex-channels/channel0"}]}}]
    assert [n["path"] for n in specs["mofed"]["devices"][0]["containerEdits"]["deviceNodes"]] == [
        "/dev/infiniband/rdma_cm", "/dev/infiniband/uverbs0"]
    assert specs["mofed"]["cdiVersion"] == "0.5.0"


def test_specs_are_written_as_files_and_stale_classes_removed(tmp_path: Path) -> None:
    cdi_dir = tmp_path / "cdi"
    settings = Settings(dev_root=str(tmp_path), imex_channel_ids=(0,), cdi_spec_dir=str(cdi_dir),
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
    write_specs(resources, Settings(dev_root=str(tmp_path), cdi_spec_dir=str(cdi_dir),
                                    device_list_strategy=(ListStrategy.CDI_CRI,)), _minors())
    assert sorted(os.listdir(cdi_dir)) == ["k8s.device-plugin.nvidia.com-gpu.yaml", "nvidia.yaml"]


def test_an_unwritable_spec_directory_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    settings = Settings(cdi_spec_dir=str(blocker / "cdi"), device_list_strategy=(ListStrategy.CDI_CRI,))
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
