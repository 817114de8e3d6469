"""The state and the checks every simulated NVML call goes through.

`SimulatedCore` holds a node profile and what NVML keeps between calls (init count, pending XID events,
telemetry counters, faults injected while it runs) and answers the questions every call asks first: is the driver
loaded, is NVML initialised, which GPU (or MIG device, or GPU/compute instance) does this handle name, is that GPU
lost, does it support this call? Faults injected at run time (:mod:`.injection`) are read on every call from the
node's fault file, or given in process with :meth:`SimulatedCore.inject`; :meth:`SimulatedCore.reset_gpus` and
:meth:`SimulatedCore.reboot` are what a GPU reset and a reboot do to the node. Failures
are raised as pynvml raises them (`pynvml.NVMLError` subclasses), so callers cannot tell a simulated answer
from a real one. The calls themselves live in the `*_calls` modules and are combined in `SimulatedLibrary`.
"""

from __future__ import annotations

import os
import threading
import uuid as uuidlib
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn

import pynvml

from gpu_operator.agents.nvml.simulated.injection import (
    FaultFile,
    InjectedState,
    Injection,
    InjectionError,
    parse_injection,
)
from gpu_operator.agents.nvml.simulated.profile import (
    GpuInstanceProfile,
    GpuModel,
    MigPlacement,
    NodeProfile,
    SimulatedGpu,
    XidFault,
)
from gpu_operator.agents.nvml.simulated.records import (
    ComputeInstanceHandle,
    GpuHandle,
    GpuInstanceHandle,
    MigHandle,
)
from gpu_operator.agents.nvml.simulated.telemetry import TelemetryGenerator

__all__ = ["SimulatedCore", "MIG_UUID_NAMESPACE", "InjectionError", "mig_uuid", "fail"]

#: Namespace of the name-based UUIDs given to simulated MIG devices.
MIG_UUID_NAMESPACE = uuidlib.UUID("5f6c1d6e-8a55-4c1e-9d43-3c2b8f0e7a10")

#: Calls NVML refuses on a GPU whose MIG mode is on (utilisation belongs to the MIG devices then).
_MIG_MODE_UNSUPPORTED = frozenset(
    {"nvmlDeviceGetUtilizationRates", "nvmlDeviceGetEncoderUtilization", "nvmlDeviceGetDecoderUtilization"}
)


def mig_uuid(gpu_uuid: str, gpu_instance: int, compute_instance: int) -> str:
    """The UUID a simulated MIG device gets: stable for its GPU and instance ids."""
    return "MIG-" + str(uuidlib.uuid5(MIG_UUID_NAMESPACE, f"{gpu_uuid}/{gpu_instance}/{compute_instance}"))


def fail(code: int) -> NoReturn:
    """Fail the way pynvml does for an NVML return code."""
    raise pynvml.NVMLError(code)


class SimulatedCore:
    """Profile, state and shared checks.

    `sleep` is what an idle event wait does (tests may pass a no-op); without one, a wait blocks until its
    timeout or an injected fault. `faults_file` is the node's fault file (:mod:`.injection`).
    """

    def __init__(self, profile: NodeProfile, *, sleep: Callable[[float], None] | None = None,
                 faults_file: str | os.PathLike[str] | None = None) -> None:
        self.profile = profile
        self.calls: Counter[str] = Counter()
        self._sleep = sleep
        self._woken = threading.Event()
        self._telemetry = TelemetryGenerator(profile.seed)
        self._initialised = 0
        self._pending = deque(profile.faults.xids)
        self._lost = frozenset(profile.faults.lost_gpus)
        self._injected = InjectedState(len(profile.gpus))
        self._injection_lock = threading.RLock()
        self._faults_file = None if faults_file is None else FaultFile(faults_file)
        if self._faults_file is not None:
            for injection in self._faults_file.read_new():
                self._injected.apply(injection)  # a fault file's past XIDs were delivered to an earlier reader
        self._unsupported_calls = self._per_gpu(lambda m: m.unsupported.calls, lambda f: f.calls)
        self._unsupported_fields = self._per_gpu(lambda m: m.unsupported.fields, lambda f: f.fields)
        self._failing_calls = [
            {call: getattr(pynvml, f"NVML_ERROR_{f.error}") for f in profile.faults.failing
             if f.gpus is None or index in f.gpus for call in f.calls}
            for index in range(len(profile.gpus))
        ]
        self._lock = threading.Lock()

    def _per_gpu(
        self, of_model: Callable[[GpuModel], Sequence[Any]], of_fault: Callable[[Any], Sequence[Any]]
    ) -> list[frozenset[Any]]:
        result = []
        for index in range(len(self.profile.gpus)):
            items = set(of_model(self.profile.model_of(index)))
            for fault in self.profile.faults.not_supported:
                if fault.gpus is None or index in fault.gpus:
                    items.update(of_fault(fault))
            result.append(frozenset(items))
        return result

    # -- faults injected at run time ------------------------------------------------------------------------

    def _apply(self, injections: Iterable[Injection]) -> None:
        with self._injection_lock:
            for injection in injections:
                if injection.event and injection.gpu is not None and 0 <= injection.gpu < len(self.profile.gpus):
                    with self._lock:
                        self._pending.append(XidFault(gpu=injection.gpu, xid=injection.value or 0))
                else:
                    self._injected.apply(injection)
        self._woken.set()

    def _refresh(self) -> None:
        """Apply the lines appended to the fault file since the last call."""
        if self._faults_file is not None:
            with self._injection_lock:
                self._apply(self._faults_file.read_new())

    def inject(self, *lines: str) -> None:
        """Inject faults (lines of :mod:`.injection`'s grammar): through the fault file when the node has one, so
        every reader sees them, else into this library. Raises InjectionError for a line that does not parse."""
        parsed = [p for p in map(parse_injection, lines) if p is not None]
        if self._faults_file is None:
            self._apply(parsed)
            return
        with self._injection_lock:
            self._refresh()
            self._faults_file.append(lines)
            self._refresh()

    def reset_gpus(self, indices: Sequence[int]) -> str | None:
        """Reset GPUs as `nvidia-smi -r` would: None when done (their faults are gone), else why it failed."""
        self._refresh()
        with self._injection_lock:
            if self._injected.driver_unloaded:
                return "the NVIDIA driver is not loaded"
            failing = [i for i in indices if not 0 <= i < len(self.profile.gpus) or self._injected.gpu(i).reset_fails]
            if failing:
                return f"GPU reset failed for GPU {', '.join(map(str, failing))}"
            busy = {i: sorted(self._injected.gpu(i).processes) for i in indices if self._injected.gpu(i).processes}
            if busy:
                return "GPUs in use: " + "; ".join(f"GPU {i} by pids {pids}" for i, pids in sorted(busy.items()))
            self.inject(*(f"reset on GPU {i}" for i in indices))
        return None

    def reboot(self) -> None:
        """Restart the node: every injected fault is gone."""
        self.inject("reboot")

    def injected(self, index: int) -> Any:
        """The injected state of GPU `index` (the simulated calls read it)."""
        return self._injected.gpu(index)

    # -- checks shared by all calls -------------------------------------------------------------------------

    def _enter(self, name: str) -> None:
        self.calls[name] += 1
        self._refresh()
        if self._injected.driver_unloaded:
            fail(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
        if not self._initialised:
            fail(pynvml.NVML_ERROR_UNINITIALIZED)

    def _gpu(self, handle: Any, name: str) -> tuple[int, SimulatedGpu, GpuModel]:
        """The GPU a full-GPU call is about, after the lost / unsupported checks."""
        self._enter(name)
        if not isinstance(handle, GpuHandle):
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self._checked(handle.index, name)

    def _checked(self, index: int, name: str) -> tuple[int, SimulatedGpu, GpuModel]:
        if index in self._lost or self._injected.gpu(index).lost:
            fail(pynvml.NVML_ERROR_GPU_IS_LOST)
        gpu = self.profile.gpus[index]
        if name in self._unsupported_calls[index]:
            fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if name in self._failing_calls[index]:
            fail(self._failing_calls[index][name])
        if name in _MIG_MODE_UNSUPPORTED and gpu.mig is not None and gpu.mig.current:
            fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return index, gpu, self.profile.model_of(index)

    def _mig(self, handle: Any, name: str) -> tuple[int, SimulatedGpu, GpuModel, MigPlacement]:
        self._enter(name)
        if not isinstance(handle, MigHandle):
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        index, gpu, model = self._checked(handle.gpu, name)
        assert gpu.mig is not None
        return index, gpu, model, gpu.mig.devices[handle.position]

    def _mig_capable(self, handle: Any, name: str) -> tuple[int, SimulatedGpu, GpuModel]:
        index, gpu, model = self._gpu(handle, name)
        if not model.mig_capable:
            fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return index, gpu, model

    def _compute_slices(self, model: GpuModel, placement: MigPlacement) -> tuple[GpuInstanceProfile, int]:
        profile = model.mig_profile(placement.profile)
        assert profile is not None
        return profile, placement.compute_slices or profile.slices

    def _placements(self, gpu: SimulatedGpu) -> tuple[MigPlacement, ...]:
        return () if gpu.mig is None or not gpu.mig.current else gpu.mig.devices

    def _instance(self, handle: Any, name: str) -> tuple[int, GpuModel, MigPlacement]:
        self._enter(name)
        if not isinstance(handle, GpuInstanceHandle | ComputeInstanceHandle):
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        index, gpu, model = self._checked(handle.gpu, name)
        self._monitor_permitted(index)
        placement = next(p for p in self._placements(gpu) if p.gpu_instance == handle.gpu_instance)
        return index, model, placement

    def _monitor_permitted(self, index: int) -> None:
        """GPU and compute instance queries need the MIG monitor capability (see `Faults.mig_permission`)."""
        if index in self.profile.faults.mig_permission:
            fail(pynvml.NVML_ERROR_NO_PERMISSION)

    # -- init and system ------------------------------------------------------------------------------------

    def nvmlInitWithFlags(self, flags: int) -> None:
        self.calls["nvmlInitWithFlags"] += 1
        self._refresh()
        if self._injected.driver_unloaded:
            fail(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
        if self.profile.faults.init is not None:
            fail(getattr(pynvml, f"NVML_ERROR_{self.profile.faults.init}"))
        self._initialised += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self._initialised -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return self.profile.driver.version

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion")
        return self.profile.driver.cuda_version

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._enter("nvmlSystemGetNVMLVersion")
        return self.profile.driver.nvml_version
