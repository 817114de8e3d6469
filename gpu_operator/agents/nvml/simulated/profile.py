"""Simulated GPU nodes described as data: the profile format and how profiles are found.

A profile is a YAML document describing one node: the driver (versions), the GPU models it holds (name as NVML
reports it, PCI ids, compute capability, memory, NVLinks, MIG GPU-instance profiles, fields the model lacks,
ranges for its time-varying values), the GPUs themselves (UUID, serial, PCI address, MIG layout) and optional
faults (a GPU that is lost, XID events to deliver, calls or fields that answer "not supported", calls that fail
with another NVML error, an NVML init error). Profiles ship in the package
(`gpu_operator/agents/nvml/profiles/<name>.yaml`) and can be loaded from any path.

`extends: <name or relative path>` starts from another profile and merges this one over it (mappings merge
key by key, everything else replaces), which keeps fault scenarios to a few lines. Top-level keys starting
with `x-` are ignored: they hold YAML anchors (a MIG layout shared by several GPUs, for instance).
"""

from __future__ import annotations

import uuid
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import pynvml
import yaml
from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "Telemetry",
    "GpuInstanceProfile",
    "Fabric",
    "Unsupported",
    "GpuModel",
    "MigPlacement",
    "MigLayout",
    "SimulatedGpu",
    "XidFault",
    "NotSupportedFault",
    "FailingCall",
    "Faults",
    "VgpuHost",
    "Driver",
    "NodeProfile",
    "ProfileError",
    "profile_names",
    "load_profile",
    "parse_profile",
]

_PACKAGE_PROFILES = "profiles"
Range = tuple[int, int]


class ProfileError(ValueError):
    """A profile cannot be found, read or validated."""


#: Unit spellings kept in the YAML keys (memoryMiB, smClockMHz, nvlinkKiBPerSecond).
_UNITS = {"Mib": "MiB", "Mhz": "MHz", "Kib": "KiB"}


def _alias(name: str) -> str:
    alias = to_camel(name)
    for plain, unit in _UNITS.items():
        alias = alias.replace(plain, unit)
    return alias


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=_alias, populate_by_name=True)


class Telemetry(_Spec):
    """Inclusive [low, high] ranges the simulated time-varying values are drawn from."""

    gpu_temp_c: Range = (30, 40)
    memory_temp_c: Range = (32, 45)
    power_milliwatts: Range = (60_000, 90_000)
    sm_clock_mhz: Range = (1_000, 1_400)
    memory_clock_mhz: Range = (1_200, 1_600)
    gpu_util_percent: Range = (0, 100)
    memory_util_percent: Range = (0, 50)
    encoder_util_percent: Range = (0, 0)
    decoder_util_percent: Range = (0, 0)
    memory_used_mib: Range = (0, 1_024)
    nvlink_kib_per_second: Range = (0, 0)
    pcie_replay_count: int = 0


class GpuInstanceProfile(_Spec):
    """One MIG GPU instance profile as nvmlDeviceGetGpuInstanceProfileInfo describes it."""

    name: str
    index: int
    id: int
    slices: int
    instances: int
    memory_mib: int
    multiprocessors: int
    copy_engines: int
    decoders: int
    encoders: int = 0
    jpegs: int = 0
    ofas: int = 0


class Fabric(_Spec):
    """NVLink fabric registration as nvmlDeviceGetGpuFabricInfoV reports it."""

    state: Literal["not-supported", "not-started", "in-progress", "completed"]
    status: int = 0
    cluster_uuid: uuid.UUID
    clique_id: int = 0


class Unsupported(_Spec):
    """NVML calls (by pynvml name) and field ids that answer "not supported"."""

    calls: tuple[str, ...] = ()
    fields: tuple[int, ...] = ()


class GpuModel(_Spec):
    """A GPU model: what every GPU of this model has in common."""

    name: str
    brand: str = "NVIDIA"
    pci_device_id: int
    pci_subsystem_id: int
    pci_class: str = "0x030200"
    compute_capability: tuple[int, int]
    memory_mib: int
    reserved_mib: int = 0
    vbios_version: str | None = None
    nvlinks: int = 0
    mig_capable: bool = False
    max_mig_devices: int = 7
    mig_profiles: tuple[GpuInstanceProfile, ...] = ()
    fabric: Fabric | None = None
    unsupported: Unsupported = Unsupported()
    telemetry: Telemetry = Telemetry()

    def mig_profile(self, name: str) -> GpuInstanceProfile | None:
        return next((p for p in self.mig_profiles if p.name == name), None)


class MigPlacement(_Spec):
    """One MIG device: a compute instance in a GPU instance of the named GPU-instance profile."""

    profile: str
    gpu_instance: int
    compute_instance: int = 0
    compute_slices: int | None = None
    #: The compute instance profile index (NVML_COMPUTE_INSTANCE_PROFILE_*) when it is not the standard one for
    #: its slices, e.g. 8 (7_SLICE_NVL) on GB200 NVL racks.
    compute_profile: int | None = None


class MigLayout(_Spec):
    """MIG mode (current and pending) and the MIG devices that exist."""

    current: bool
    pending: bool | None = None
    devices: tuple[MigPlacement, ...] = ()

    @property
    def pending_mode(self) -> bool:
        return self.current if self.pending is None else self.pending


class SimulatedProcess(_Spec):
    """A compute process on a GPU: what NVML reports of it (frame-buffer use, SM utilisation sample)."""

    pid: int
    used_memory_mib: int | None = None
    sm_util_percent: int = 0


class SimulatedGpu(_Spec):
    """One GPU of the node, in NVML index order."""

    model: str
    uuid: str
    serial: str
    bus_id: str
    minor: int
    numa_node: int | None = None
    mig: MigLayout | None = None
    processes: tuple[SimulatedProcess, ...] = ()

    @field_validator("uuid")
    @classmethod
    def _gpu_uuid(cls, value: str) -> str:
        if not value.startswith("GPU-"):
            raise ValueError("a GPU UUID starts with 'GPU-'")
        uuid.UUID(value.removeprefix("GPU-"))
        return value


class XidFault(_Spec):
    """An XID error delivered once through the event set (to MIG instances when ids are given).

    `unidentified`: NVML cannot name the device the event came from (`nvmlDeviceGetUUID` fails on the event's
    device handle), as for a GPU that falls off the bus as it raises the XID.
    """

    gpu: int
    xid: int
    gpu_instance: int | None = None
    compute_instance: int | None = None
    unidentified: bool = False


class NotSupportedFault(_Spec):
    """Calls and field ids that answer "not supported" on the listed GPUs (all GPUs when omitted)."""

    gpus: tuple[int, ...] | None = None
    calls: tuple[str, ...] = ()
    fields: tuple[int, ...] = ()


class FailingCall(_Spec):
    """Calls that fail with an NVML error (`error`: a name such as UNKNOWN, as in NVML_ERROR_UNKNOWN) on the listed
    GPUs (all GPUs when omitted)."""

    gpus: tuple[int, ...] | None = None
    calls: tuple[str, ...]
    error: str = "UNKNOWN"

    @field_validator("error")
    @classmethod
    def _nvml_error(cls, value: str) -> str:
        if not isinstance(getattr(pynvml, f"NVML_ERROR_{value}", None), int):
            raise ValueError(f"{value!r} is not an NVML error name (NVML_ERROR_<name>, such as UNKNOWN)")
        return value


class Faults(_Spec):
    """Injected failures. `init` is an NVML error name such as DRIVER_NOT_LOADED.

    `mig_permission` lists GPUs whose GPU and compute instance queries answer NO_PERMISSION, as NVML answers a
    process without the MIG monitor capability (a container not given `NVIDIA_MIG_MONITOR_DEVICES=all`).
    """

    init: str | None = None
    lost_gpus: tuple[int, ...] = ()
    mig_permission: tuple[int, ...] = ()
    xids: tuple[XidFault, ...] = ()
    not_supported: tuple[NotSupportedFault, ...] = ()
    failing: tuple[FailingCall, ...] = ()


class VgpuHost(_Spec):
    """Makes the GPUs vGPU devices whose host runs this vGPU manager (shown in PCI config space)."""

    driver_version: str
    branch: str


class Driver(_Spec):
    version: str
    cuda_version: int
    nvml_version: str


class NodeProfile(_Spec):
    """A whole simulated node."""

    name: str
    description: str = ""
    seed: int = 0
    driver: Driver
    models: dict[str, GpuModel]
    gpus: tuple[SimulatedGpu, ...]
    faults: Faults = Faults()
    vgpu_host: VgpuHost | None = None

    @model_validator(mode="after")
    def _consistent(self) -> NodeProfile:
        problems = [*self._gpu_problems(), *self._fault_problems()]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _gpu_problems(self) -> list[str]:
        problems = []
        for index, gpu in enumerate(self.gpus):
            model = self.models.get(gpu.model)
            if model is None:
                problems.append(f"gpus[{index}]: unknown model {gpu.model!r}")
                continue
            if gpu.mig is not None and not model.mig_capable:
                problems.append(f"gpus[{index}]: model {gpu.model!r} is not MIG-capable")
            for placement in () if gpu.mig is None else gpu.mig.devices:
                if model.mig_profile(placement.profile) is None:
                    problems.append(f"gpus[{index}]: model {gpu.model!r} has no MIG profile {placement.profile!r}")
        return problems

    def _fault_problems(self) -> list[str]:
        known = range(len(self.gpus))
        named = [*self.faults.lost_gpus, *(x.gpu for x in self.faults.xids)]
        named += [g for f in (*self.faults.not_supported, *self.faults.failing) for g in (f.gpus or ())]
        return [f"faults: no GPU {i}" for i in named if i not in known]

    def model_of(self, index: int) -> GpuModel:
        return self.models[self.gpus[index].model]


def _merge(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _merge(base[key], value) if key in base else value
        return merged
    return override


def _package_profile(name: str) -> Path | None:
    candidate = resources.files("gpu_operator.agents.nvml").joinpath(_PACKAGE_PROFILES, f"{name}.yaml")
    return Path(str(candidate)) if candidate.is_file() else None


def profile_names() -> tuple[str, ...]:
    """The profiles shipped in the package."""
    directory = resources.files("gpu_operator.agents.nvml").joinpath(_PACKAGE_PROFILES)
    return tuple(sorted(p.name.removesuffix(".yaml") for p in directory.iterdir() if p.name.endswith(".yaml")))


def _looks_like_path(reference: str) -> bool:
    return "/" in reference or reference.endswith((".yaml", ".yml"))


def _locate(reference: str, relative_to: Path | None) -> Path:
    if _looks_like_path(reference):
        path = Path(reference)
        if not path.is_absolute() and relative_to is not None:
            path = relative_to / path
        if not path.is_file():
            raise ProfileError(f"no simulated GPU profile at {path}")
        return path
    path = _package_profile(reference)
    if path is None:
        raise ProfileError(f"no simulated GPU profile named {reference!r} (known: {', '.join(profile_names())})")
    return path


def _raw(path: Path, chain: tuple[Path, ...]) -> dict[str, Any]:
    if path in chain:
        raise ProfileError(f"profile {path} extends itself")
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ProfileError(f"cannot read profile {path}: {error}") from error
    if not isinstance(document, dict):
        raise ProfileError(f"profile {path} is not a mapping")
    document = {key: value for key, value in document.items() if not str(key).startswith("x-")}
    document.setdefault("name", path.stem)
    parent = document.pop("extends", None)
    if parent is None:
        return document
    base = _raw(_locate(str(parent), path.parent), (*chain, path))
    base.pop("name", None)
    return _merge(base, document)


def parse_profile(document: dict[str, Any]) -> NodeProfile:
    """Validate a profile document (already merged). Raises ProfileError with every problem found."""
    try:
        return NodeProfile.model_validate(document)
    except ValueError as error:
        raise ProfileError(f"invalid simulated GPU profile {document.get('name', '?')!r}: {error}") from error


def load_profile(reference: str) -> NodeProfile:
    """A profile by package name (`h100-8x`) or by path (`./faulty.yaml`)."""
    path = _locate(reference, None)
    return parse_profile(_raw(path, ()))
