"""A simulated NVML library: pynvml's calls answered from a node profile.

`SimulatedLibrary` implements the `NvmlLibrary` Protocol, so the real adapter runs on top of it unchanged.
It behaves the way NVML does where the agents can tell the difference:

* calls before `nvmlInitWithFlags` fail with "uninitialized"; an `init` fault makes init itself fail;
* a GPU listed in `faults.lostGpus` answers every call except `nvmlDeviceGetHandleByIndex` with "GPU is lost",
  and so do its MIG devices;
* calls and field ids listed as unsupported (by the model, or by a fault) answer "not supported", as do MIG
  queries on GPUs that are not MIG-capable, fabric queries on models without a fabric, NVLink queries past the
  model's links, and utilisation queries on a GPU whose MIG mode is on;
* each XID fault is delivered exactly once by `nvmlEventSetWait`, to an event set the GPU registered with;
  with nothing pending a wait sleeps for its timeout and fails with "timeout";
* time-varying values come from :class:`~gpu_operator.agents.nvml.simulated.telemetry.TelemetryGenerator`;
* GPM (performance monitoring) works on Hopper and later models, vGPU licensing on nodes with a `vgpuHost`.

`calls` counts the calls made, by name, which lets tests check that a metrics pass stays cheap.
"""

from __future__ import annotations

from gpu_operator.agents.nvml.simulated.core import MIG_UUID_NAMESPACE, mig_uuid
from gpu_operator.agents.nvml.simulated.device_calls import DeviceCalls
from gpu_operator.agents.nvml.simulated.event_calls import EventCalls
from gpu_operator.agents.nvml.simulated.gpm_calls import GpmCalls
from gpu_operator.agents.nvml.simulated.licensing_calls import LicensingCalls
from gpu_operator.agents.nvml.simulated.mig_calls import MigCalls
from gpu_operator.agents.nvml.simulated.mig_write_calls import MigWriteCalls
from gpu_operator.agents.nvml.simulated.telemetry_calls import TelemetryCalls

__all__ = ["SimulatedLibrary", "MIG_UUID_NAMESPACE", "mig_uuid"]


class SimulatedLibrary(DeviceCalls, MigCalls, MigWriteCalls, TelemetryCalls, EventCalls, GpmCalls, LicensingCalls):
    """Every NVML call the adapter makes, for one simulated node (`SimulatedLibrary(profile, sleep=...)`)."""
