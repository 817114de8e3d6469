"""The CDI specs behind the device names the plugin hands out with the `cdi-annotations` / `cdi-cri` strategies.

With a CDI strategy, `Allocate` answers with fully qualified CDI device names (`k8s.device-plugin.nvidia.com/gpu=
<UUID or index>`) instead of environment variables, and the container runtime resolves each name in the CDI specs
of its spec directory (`/var/run/cdi`). A name that no spec defines fails the container's creation, so the plugin
writes, as NVIDIA's does (or `nvidia-ctk cdi generate` for the `nvidia.com` vendor), one spec per device class:

* `gpu`: one device per advertised physical device, under both of its names (UUID and index, as the id strategy
  may pick either), and a device `all` bringing all of them. The spec is complete, as the one NVIDIA's plugin
  makes with the toolkit's nvcdi library (see :mod:`gpu_operator.agents.cdi`): its spec-wide edits mount the
  driver's libraries, programs, firmware and IPC sockets found under the driver root (`--driver-root-ctr-path`,
  where the container sees `--driver-root`), add the control device nodes that exist and the toolkit's hooks
  (`.so` symlinks, ldcache, CUDA compat, ...) run from `--nvidia-cdi-hook-path`, and set
  `NVIDIA_VISIBLE_DEVICES=void`, so that a legacy runtime hook does not inject the GPUs a second time. A full GPU
  brings `/dev/nvidia<minor>`, its DRM nodes and the hook of their `/dev/dri/by-path` links; a MIG device its
  parent's node plus the GPU- and compute-instance access capabilities (`/dev/nvidia-caps/nvidia-cap<N>`, from
  `nvidia-caps/mig-minors`, keyed by the parent's `/dev/nvidia<minor>` minor as NVIDIA's are), and the parent's
  DRM nodes too for a `+gfx` profile. Device nodes are the character devices that exist under the dev root; one
  not read-writable by all adds its group to `additionalGids`. `--cdi-feature-flags` and `--cdi-disable-hooks`
  shape it as they shape NVIDIA's (see :mod:`gpu_operator.agents.cdi.features`);
* `imex-channel` when IMEX channels are configured, and `gdrcopy`, `gds`, `mofed` (device `all`, the device nodes
  of that driver found on the node) when those features are enabled.

Host paths are the host's: under the dev root for device nodes, under the driver root for mounts. The
`cdiVersion` is the lowest the spec's content needs, by the CDI library's rules (specs-go/version.go
MinimumRequiredVersion). :func:`spec_problems` checks a spec against the CDI specification's rules (names, required
fields, absolute paths, non-empty device edits) before it is written.

**One file per class, NVIDIA's.** Each spec is written where and as NVIDIA's plugin writes it:
`<dir>/k8s.device-plugin.nvidia.com-<class>.json`, JSON (k8s-device-plugin v0.20.0 internal/cdi/cdi.go
`CreateSpecFile`: container-device-interface `GenerateNameForSpec` + `.json`). A container runtime's CDI cache drops
every device that two specs of one directory define (container-device-interface v1.1.0 pkg/cdi/cache.go `refresh`:
"conflicting device"), and NVIDIA's plugin never removes its spec; with the same file, each plugin replaces the
other's instead of leaving a second definition of every `k8s.device-plugin.nvidia.com/gpu=<UUID>`. The `.yaml`
files earlier versions of this agent wrote are removed for the same reason, as are the files of classes no
longer configured. Writing is atomic: a temporary file, which the cache does not read (its name does not end in
`.json` or `.yaml`), renamed into place.
"""

from __future__ import annotations

import glob
import json
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any


from gpu_operator.agents.cdi import DriverRoot, Layout, common_edits, gpu_edits, merge_edits, mig_edits
from gpu_operator.agents.cdi.drm import SYS_ROOT
from gpu_operator.agents.device_plugin.allocate import CDI_VENDOR, mig_minors
from gpu_operator.agents.device_plugin.devices import DeviceError, PluginDevice, Resource
from gpu_operator.agents.device_plugin.settings import CDI_STRATEGIES, Settings

__all__ = [
    "CDI_VERSIONS",
    "FEATURE_NODES",
    "spec_path",
    "layout_for",
    "mig_capability_paths",
    "gpu_spec",
    "specs_for",
    "minimum_version",
    "spec_problems",
    "spec_json",
    "write_specs",
]

#: Released CDI specification versions, oldest first.
CDI_VERSIONS = ("0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0")
_BASE_VERSION = "0.3.0"
#: NVIDIA's file name extension and the one earlier versions of this agent used.
_EXTENSION, _LEGACY_EXTENSION = ".json", ".yaml"
#: Enabled feature -> (CDI class, device node patterns under the dev root).
FEATURE_NODES: dict[str, tuple[str, tuple[str, ...]]] = {
    "gdrcopy_enabled": ("gdrcopy", ("/dev/gdrdrv",)),
    "gds_enabled": ("gds", ("/dev/nvidia-fs*",)),
    "mofed_enabled": ("mofed", ("/dev/infiniband/*",)),
}
_IMEX_CLASS = "imex-channel"
_IMEX_NODE = "/dev/nvidia-caps-imex-channels/channel{}"
_ALL = "all"
_VENDOR_OR_CLASS = re.compile(r"^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?\Z")
_DEVICE_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?\Z")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: The fields of each level in the order the CDI library's Go types declare them (how NVIDIA's file reads).
_SPEC_FIELDS = ("cdiVersion", "kind", "annotations", "devices", "containerEdits")
_DEVICE_FIELDS = ("name", "annotations", "containerEdits")
_EDIT_FIELDS = ("env", "deviceNodes", "netDevices", "hooks", "mounts", "intelRdt", "additionalGids")
_SPEC_KEYS, _DEVICE_KEYS, _EDIT_KEYS = set(_SPEC_FIELDS), set(_DEVICE_FIELDS), set(_EDIT_FIELDS)
_HOOK_NAMES = ("prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop")

Spec = dict[str, Any]


def spec_path(directory: str, cdi_class: str, extension: str = _EXTENSION) -> str:
    """Where the spec of one class goes: `<dir>/<vendor>-<class>.json`, as NVIDIA's plugin names it."""
    return os.path.join(directory, f"{CDI_VENDOR}-{cdi_class}{extension}")


def _node(path: str, settings: Settings) -> dict[str, str]:
    return {"path": path, "hostPath": posixpath.join(settings.device_root, path.lstrip("/"))}


def layout_for(settings: Settings, sys_root: str = SYS_ROOT) -> Layout:
    """Where the plugin finds the driver, the device nodes and sysfs, how the host names them, and the flags."""
    return Layout(DriverRoot(settings.driver_root_ctr_path), dev_root=settings.device_root_here,
                  host_driver_root=settings.driver_root, host_dev_root=settings.device_root,
                  hook_path=settings.nvidia_cdi_hook_path, sys_root=sys_root,
                  feature_flags=settings.cdi_feature_flags, disabled_hooks=settings.cdi_disable_hooks)


def mig_capability_paths(device: PluginDevice, table: Mapping[str, int], proc_root: str) -> list[str]:
    """The GI and CI access capability nodes of a MIG device, keyed by its parent's `/dev/nvidia<minor>` minor.

    Raises DeviceError naming the missing `mig-minors` entry.
    """
    if device.minor is None:
        raise DeviceError(f"MIG device {device.index}: its parent GPU has no readable minor number")
    gi = f"gpu{device.minor}/gi{device.gpu_instance_id}"
    paths = []
    for key in (f"{gi}/access", f"{gi}/ci{device.compute_instance_id}/access"):
        if key not in table:
            raise DeviceError(f"no capability device for MIG device {device.index} "
                              f"({key} is not in {proc_root}/driver/nvidia-caps/mig-minors)")
        paths.append(f"/dev/nvidia-caps/nvidia-cap{table[key]}")
    return paths


def _all_edits(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [spec.get("containerEdits") or {}] + [d.get("containerEdits") or {} for d in spec.get("devices") or []]


def _needs_1_1(spec: Mapping[str, Any]) -> bool:
    rdt = [e.get("intelRdt") or {} for e in _all_edits(spec)]
    return any(e.get("netDevices") for e in _all_edits(spec)) or any(
        r.get("schemata") is not None or r.get("enableMonitoring") for r in rdt)


def _needs_0_7(spec: Mapping[str, Any]) -> bool:
    return any(e.get("intelRdt") is not None or e.get("additionalGids") for e in _all_edits(spec))


def _needs_0_6(spec: Mapping[str, Any]) -> bool:
    devices = spec.get("devices") or []
    return bool(spec.get("annotations") or any(d.get("annotations") for d in devices)
                or "." in str(spec.get("kind", "")).partition("/")[2])


def _needs_0_5(spec: Mapping[str, Any]) -> bool:
    digit_first = any(str(d.get("name", ""))[:1].isdigit() for d in spec.get("devices") or [])
    return digit_first or any(n.get("hostPath") for e in _all_edits(spec) for n in e.get("deviceNodes") or [])


#: Newest first: the version each feature needs (specs-go/version.go requiresV110 ... requiresV050).
_VERSION_RULES: tuple[tuple[str, Callable[[Mapping[str, Any]], bool]], ...] = (
    ("1.1.0", _needs_1_1), ("0.7.0", _needs_0_7), ("0.6.0", _needs_0_6), ("0.5.0", _needs_0_5))


def minimum_version(spec: Mapping[str, Any]) -> str:
    """The lowest CDI version that allows what the spec uses."""
    return next((version for version, needed in _VERSION_RULES if needed(spec)), _BASE_VERSION)


def _spec(cdi_class: str, devices: list[dict[str, Any]], common: Mapping[str, Any] | None = None) -> Spec:
    spec: Spec = {"cdiVersion": _BASE_VERSION, "kind": f"{CDI_VENDOR}/{cdi_class}", "devices": devices}
    if common:
        spec["containerEdits"] = dict(common)
    spec["cdiVersion"] = minimum_version(spec)
    return spec


def _has_graphics(profile: str | None) -> bool:
    """A MIG profile with the `gfx` attribute (`1g.12gb+gfx`), whose devices get DRM nodes (dgpu/nvml.go)."""
    attributes = (profile or "").partition("+")[2]
    return "gfx" in attributes.split(",")


def gpu_spec(resources: Sequence[Resource], settings: Settings,
             minors: Callable[[], dict[str, int]] | None = None, layout: Layout | None = None) -> Spec:
    """The `gpu` class: every advertised physical device by UUID and by index, and `all`, with the driver's edits.

    Raises DeviceError when the driver root holds no driver or a MIG device's capabilities are unknown.
    """
    layout = layout or layout_for(settings)
    cached: dict[str, int] | None = None

    def table() -> dict[str, int]:
        nonlocal cached
        if cached is None:
            cached = (minors or (lambda: mig_minors(settings.proc_root)))()
        return cached

    try:
        common = common_edits(layout)
    except LookupError as error:
        raise DeviceError(f"cannot write the CDI spec: {error}; set --driver-root-ctr-path (DRIVER_ROOT_CTR_PATH) "
                          "to where this container sees the driver root") from error
    physical = {d.uuid: d for r in resources for d in r.devices}
    devices: list[dict[str, Any]] = []
    every: list[dict[str, Any]] = []
    for device in physical.values():
        if device.is_mig:
            capabilities = mig_capability_paths(device, table(), settings.proc_root)
            graphics = device.pci_bus_id if _has_graphics(device.mig_profile) else None
            edits = mig_edits(layout, int(device.minor or 0), capabilities, graphics)
        else:
            edits = gpu_edits(layout, device.minor, device.pci_bus_id)
        if not edits:
            raise DeviceError(f"cannot write the CDI spec: no device node of device {device.index} exists under "
                              f"{settings.device_root_here}/dev")
        devices += [{"name": name, "containerEdits": edits} for name in (device.uuid, device.index)]
        every.append(edits)
    if every:
        devices.append({"name": _ALL, "containerEdits": merge_edits(every)})
    return _spec("gpu", devices, common)


def _found(patterns: Iterable[str], settings: Settings) -> list[str]:
    here = settings.device_root_here
    paths: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(posixpath.join(here, pattern.lstrip("/"))))
        paths += ["/" + posixpath.relpath(m, here) for m in matches]
    return paths


def _feature_specs(settings: Settings) -> dict[str, Spec]:
    specs: dict[str, Spec] = {}
    channels = settings.imex_channel_ids
    if channels:
        specs[_IMEX_CLASS] = _spec(_IMEX_CLASS, [
            {"name": str(c), "containerEdits": {"deviceNodes": [_node(_IMEX_NODE.format(c), settings)]}}
            for c in channels])
    for flag, (cdi_class, patterns) in FEATURE_NODES.items():
        if not getattr(settings, flag):
            continue
        paths = _found(patterns, settings)
        if not paths:
            raise DeviceError(f"{cdi_class} is enabled with a CDI device list strategy, but none of "
                              f"{', '.join(patterns)} exists under {settings.device_root_here}: load the "
                              f"{cdi_class} driver on the node or disable {cdi_class}")
        specs[cdi_class] = _spec(cdi_class, [
            {"name": _ALL, "containerEdits": {"deviceNodes": [_node(p, settings) for p in paths]}}])
    return specs


def specs_for(resources: Sequence[Resource], settings: Settings,
              minors: Callable[[], dict[str, int]] | None = None) -> dict[str, Spec]:
    """Every spec the settings call for, by CDI class; none without a CDI device list strategy."""
    if not any(s in CDI_STRATEGIES for s in settings.device_list_strategy):
        return {}
    return {"gpu": gpu_spec(resources, settings, minors), **_feature_specs(settings)}


def _edit_problems(edits: Any, where: str) -> list[str]:
    if not isinstance(edits, Mapping):
        return [f"{where} must be a mapping"]
    problems = [f"{where}.{k}: not a CDI container edit" for k in edits if k not in _EDIT_KEYS]
    for i, env in enumerate(edits.get("env") or []):
        if not isinstance(env, str) or not _ENV.match(env):
            problems.append(f"{where}.env[{i}] {env!r} is not NAME=VALUE")
    for i, node in enumerate(edits.get("deviceNodes") or []):
        path = node.get("path") if isinstance(node, Mapping) else None
        if not isinstance(path, str) or not path.startswith("/"):
            problems.append(f"{where}.deviceNodes[{i}].path must be an absolute path, not {path!r}")
        host = node.get("hostPath") if isinstance(node, Mapping) else None
        if host is not None and (not isinstance(host, str) or not host.startswith("/")):
            problems.append(f"{where}.deviceNodes[{i}].hostPath must be an absolute path, not {host!r}")
    for i, mount in enumerate(edits.get("mounts") or []):
        if not isinstance(mount, Mapping) or not mount.get("hostPath") or not mount.get("containerPath"):
            problems.append(f"{where}.mounts[{i}] needs hostPath and containerPath")
    for i, hook in enumerate(edits.get("hooks") or []):
        name = hook.get("hookName") if isinstance(hook, Mapping) else None
        if name not in _HOOK_NAMES:
            problems.append(f"{where}.hooks[{i}].hookName {name!r} is not one of {', '.join(_HOOK_NAMES)}")
        path = hook.get("path") if isinstance(hook, Mapping) else None
        if not isinstance(path, str) or not path.startswith("/"):
            problems.append(f"{where}.hooks[{i}].path must be an absolute path, not {path!r}")
    return problems


def _empty(edits: Any) -> bool:
    return not isinstance(edits, Mapping) or not any(edits.get(k) for k in _EDIT_KEYS)


def spec_problems(spec: Any) -> list[str]:
    """What makes `spec` an invalid CDI spec (empty when it is valid)."""
    if not isinstance(spec, Mapping):
        return ["a CDI spec must be a mapping"]
    problems = [f"{k}: not a CDI spec field" for k in spec if k not in _SPEC_KEYS]
    version = spec.get("cdiVersion")
    if version not in CDI_VERSIONS:
        problems.append(f"cdiVersion {version!r} is not a released CDI version ({', '.join(CDI_VERSIONS)})")
    elif CDI_VERSIONS.index(version) < CDI_VERSIONS.index(minimum_version(spec)):
        problems.append(f"cdiVersion {version} is too old for the spec's content (needs {minimum_version(spec)})")
    vendor, _, cdi_class = str(spec.get("kind", "")).partition("/")
    if not _VENDOR_OR_CLASS.match(vendor) or not _VENDOR_OR_CLASS.match(cdi_class):
        problems.append(f"kind {spec.get('kind')!r} is not <vendor>/<class> of letters, digits, '_', '-' and '.'")
    devices = spec.get("devices")
    if not isinstance(devices, list) or not devices:
        return problems + ["devices must be a non-empty list"]
    seen: set[str] = set()
    for i, device in enumerate(devices):
        where = f"devices[{i}]"
        if not isinstance(device, Mapping):
            problems.append(f"{where} must be a mapping")
            continue
        problems += [f"{where}.{k}: not a CDI device field" for k in device if k not in _DEVICE_KEYS]
        name = device.get("name")
        if not isinstance(name, str) or not _DEVICE_NAME.match(name):
            problems.append(f"{where}.name {name!r} is not a CDI device name")
        elif name in seen:
            problems.append(f"{where}.name {name!r} is defined twice")
        else:
            seen.add(name)
        edits = device.get("containerEdits")
        if _empty(edits):
            problems.append(f"{where} ({name}) has no container edits")
        else:
            problems += _edit_problems(edits, f"{where}.containerEdits")
    if "containerEdits" in spec:
        problems += _edit_problems(spec["containerEdits"], "containerEdits")
    return problems


def _ordered(fields: Sequence[str], value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: value[k] for k in sorted(value, key=lambda k: fields.index(k) if k in fields else len(fields))}


def spec_json(spec: Mapping[str, Any]) -> str:
    """The spec as NVIDIA's file holds it: compact JSON, fields in the Go types' order (encoding/json Marshal)."""
    ordered = _ordered(_SPEC_FIELDS, spec)
    if "containerEdits" in ordered:
        ordered["containerEdits"] = _ordered(_EDIT_FIELDS, ordered["containerEdits"])
    ordered["devices"] = [{**_ordered(_DEVICE_FIELDS, d), "containerEdits": _ordered(_EDIT_FIELDS, d["containerEdits"])}
                          for d in ordered.get("devices") or []]
    return json.dumps(ordered, separators=(",", ":"))


def _write(path: str, spec: Spec) -> None:
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(spec_json(spec))
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)


def _managed_classes() -> tuple[str, ...]:
    return ("gpu", _IMEX_CLASS, *(cdi_class for cdi_class, _ in FEATURE_NODES.values()))


def write_specs(resources: Sequence[Resource], settings: Settings,
                minors: Callable[[], dict[str, int]] | None = None) -> dict[str, str]:
    """Write the specs the settings call for (class -> path) and remove the plugin's other specs.

    Raises DeviceError when a spec cannot be made or written; nothing is written then.
    """
    specs = specs_for(resources, settings, minors)
    for cdi_class, spec in specs.items():
        problems = spec_problems(spec)
        if problems:
            raise DeviceError(f"the {cdi_class} CDI spec is invalid: {'; '.join(problems)}")
    directory = settings.cdi_spec_dir
    written: dict[str, str] = {}
    try:
        if specs:
            os.makedirs(directory, exist_ok=True)
        for cdi_class, spec in specs.items():
            written[cdi_class] = spec_path(directory, cdi_class)
            _write(written[cdi_class], spec)
        stale = [spec_path(directory, c) for c in _managed_classes() if c not in specs]
        stale += [spec_path(directory, c, _LEGACY_EXTENSION) for c in _managed_classes()]
        for path in (p for p in stale if os.path.lexists(p)):
            os.unlink(path)
    except OSError as error:
        raise DeviceError(f"cannot write the CDI specs in {directory}: {error}") from error
    return written
