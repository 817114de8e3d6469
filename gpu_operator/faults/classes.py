"""Fault classes: what a GPU fault means for its node, and what is done about it by default.

Every fault the catalog knows (an XID, a DCGM health failure, an NVML health reading) falls in exactly one class.
A class names the Node condition the health monitor writes while the fault holds (NPD style, `GPU...`; none for
the classes that only make Events and metrics), the default action ladder the remediation climbs one rung per
attempt, and whether the class quarantines (cordons) a node by default. Remediation rules per class and pool
replace the ladder; the catalog only gives the defaults.

Ladder steps are the remediation's vocabulary (:data:`ACTIONS`): `observe` (Events and metrics only), `cordon`,
`taint`, `drain`, `reset-gpu`, `reboot`, `reimage` (or the cloud's repair) and the terminal `needs-human`.

Why the defaults are what they are, as an SRE of a large fleet would set them:

* `application` and `informational` never quarantine: an application fault (XID 13, 31, 43, 45 on their own) is
  the workload's, and NVIDIA's catalog says "no action" for the informational ones; one job crashing must not
  cordon a pool.
* `reset-required` resets the GPU before it reboots the node: a reset keeps the node's other GPUs in service and
  is what NVIDIA's catalog asks first (RESET_GPU); a failed reset climbs to a reboot, a recurrence to a person.
* `fallen-off-bus` cannot be reset (the GPU does not answer on PCIe): NVIDIA says restart the machine
  (RESTART_BM); when a reboot does not bring it back, a reimage (a fresh host on Azure) is the next step.
* `nvlink` starts with a reset too: the decode of XIDs 144-150 asks RESET_GPU for every fatal row, and a reboot
  is the step after it.
* `hardware-failure` (CONTACT_SUPPORT) takes the node out of service and hands it to a person: nothing local fixes
  it.
* `thermal` and `driver-failure` observe: a hot GPU is the room's or the fan's problem, and a driver that is not
  ready is the operator's own rollout, which a reboot would only restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "ACTIONS",
    "APPLICATION",
    "DRIVER_FAILURE",
    "FALLEN_OFF_BUS",
    "FAULT_CLASSES",
    "Fault",
    "FaultClass",
    "HARDWARE_FAILURE",
    "INFORMATIONAL",
    "NVLINK",
    "QUARANTINE_ACTIONS",
    "REBOOT_REQUIRED",
    "RESET_REQUIRED",
    "THERMAL",
    "fault_class",
]

#: The steps of an action ladder, in the remediation's vocabulary.
ACTIONS: tuple[str, ...] = ("observe", "cordon", "taint", "drain", "reset-gpu", "reboot", "reimage", "needs-human")
#: The steps that take a node out of scheduling.
QUARANTINE_ACTIONS: frozenset[str] = frozenset({"cordon", "taint"})


@dataclass(frozen=True, slots=True)
class FaultClass:
    """One class of GPU fault.

    `condition` is the Node condition type the health monitor writes (None: Events and metrics only); `ladder`
    the default actions, tried in order; `quarantine` whether the class takes a node out of service by default.
    """

    name: str
    condition: str | None
    ladder: tuple[str, ...]
    quarantine: bool
    description: str


_OBSERVE = ("observe",)
_RESET_LADDER = ("cordon", "drain", "reset-gpu", "reboot", "needs-human")

APPLICATION = FaultClass(
    "application", None, _OBSERVE, False,
    "A fault of the workload, not of the GPU (NVIDIA's RESTART_APP; XIDs 13, 31, 43, 45 on their own): the "
    "application restarts, the GPU stays in service.")
INFORMATIONAL = FaultClass(
    "informational", None, _OBSERVE, False,
    "An event NVIDIA's catalog asks no action for (IGNORE, NONE): a row remapping that took place, an SMBPBI "
    "test message, a power-smoothing notice. Reported, never acted on.")
RESET_REQUIRED = FaultClass(
    "reset-required", "GPUResetRequired", _RESET_LADDER, True,
    "The GPU must be reset before it is trusted again (NVIDIA's RESET_GPU / COMPONENT_RESET: double-bit ECC, "
    "uncontained memory error, GSP timeout or error, a pending row remap).")
FALLEN_OFF_BUS = FaultClass(
    "fallen-off-bus", "GPUFallenOffBus", ("cordon", "drain", "reboot", "reimage", "needs-human"), True,
    "The GPU no longer answers on PCIe (XID 79, NVML's GPU lost): only restarting the machine brings it back "
    "(NVIDIA's RESTART_BM).")
REBOOT_REQUIRED = FaultClass(
    "reboot-required", "GPURebootRequired", ("cordon", "drain", "reboot", "needs-human"), True,
    "The node must restart (NVIDIA's RESTART_VM; XID 151, XID 154 asking for a node reboot, NVLink down).")
NVLINK = FaultClass(
    "nvlink", "GPUNVLinkError", _RESET_LADDER, True,
    "An NVLink fault (XID 74, XIDs 144-150 whose decode asks for a reset, NVLink CRC or bit errors over "
    "threshold): reset the GPU to retrain its links, then reboot.")
HARDWARE_FAILURE = FaultClass(
    "hardware-failure", "GPUHardwareFailure", ("cordon", "drain", "needs-human"), True,
    "A fault nothing on the node repairs (NVIDIA's CONTACT_SUPPORT: a row remap failure, an unused or unknown "
    "XID, a board without auxiliary power): out of service until a person or the vendor looks.")
THERMAL = FaultClass(
    "thermal", "GPUThermal", _OBSERVE, False,
    "The GPU throttled or violated its thermal limits: a cooling problem to alert on, not to reboot.")
DRIVER_FAILURE = FaultClass(
    "driver-failure", "GPUDriverFailure", _OBSERVE, False,
    "The driver is not loaded, NVML does not start, or the validator fails after the operands were ready: the "
    "operator's own rollout to look at, which a reboot would only restart.")

#: Every class, by name.
FAULT_CLASSES: Mapping[str, FaultClass] = MappingProxyType({c.name: c for c in (
    APPLICATION, INFORMATIONAL, RESET_REQUIRED, FALLEN_OFF_BUS, REBOOT_REQUIRED, NVLINK, HARDWARE_FAILURE, THERMAL,
    DRIVER_FAILURE)})


@dataclass(frozen=True, slots=True)
class Fault:
    """What the catalog makes of one reported fault.

    `action` is NVIDIA's recommended action in NVSentinel's words (NONE, COMPONENT_RESET, RESTART_VM, RESTART_BM,
    CONTACT_SUPPORT); `reason` the Node condition reason (`XID79`, `VolatileDBE`, `DCGM_FR_NVLINK_DOWN`);
    `bucket` NVIDIA's resolution bucket or DCGM failure the verdict comes from (None where it is ours alone);
    `detail` one line for the condition message and Events.
    """

    fault_class: FaultClass
    action: str
    reason: str
    bucket: str | None
    detail: str


def fault_class(name: str) -> FaultClass:
    """The class of this name; a KeyError naming the classes there are otherwise."""
    try:
        return FAULT_CLASSES[name]
    except KeyError:
        raise KeyError(f"unknown fault class {name!r}: use one of {', '.join(FAULT_CLASSES)}") from None
