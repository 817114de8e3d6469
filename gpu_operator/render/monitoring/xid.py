"""XID classes for the alerts, read from the fault catalog (:mod:`gpu_operator.faults`).

dcgm-exporter reports the last XID of each GPU as `DCGM_FI_DEV_XID_ERRORS` with the code in the `err_code` label
(its `xid_errors.go` only names the codes; it does not class them), so the alerts select XIDs by their class in
NVIDIA's catalog, as the remediation does:

* the hardware alert fires on every XID whose class takes a node out of service by default (reset-required,
  fallen-off-bus, reboot-required, nvlink, hardware-failure): 48, 62, 64, 79, 95, 119, 120, 151, the NVLink XIDs
  74 and 144-150 before their decode, 154 before its message is read, and the CONTACT_SUPPORT ones;
* the application alert on the `application` class (NVIDIA's RESTART_APP: 13, 31, 43, 45, 94, ...);
* the catalog's `informational` XIDs (IGNORE: 63 row remapping took place, 92 single-bit ECC rate, ...) raise no
  XID alert: the memory they speak of has its own alerts (pending and failed row remaps).

The alert reads the last XID alone, without its message, so XIDs 144-150 and 154 count by their catalog bucket.
"""

from __future__ import annotations

from gpu_operator.faults import FAULT_CLASSES, xids_of

__all__ = ["XID_APPLICATION", "XID_HARDWARE", "XID_REBOOT", "xid_regex"]

#: Every XID the hardware alert fires on: those of the classes that quarantine by default.
XID_HARDWARE: tuple[int, ...] = xids_of(*(c.name for c in FAULT_CLASSES.values() if c.quarantine))

#: XIDs whose class reboots the node without trying a GPU reset first.
XID_REBOOT: tuple[int, ...] = xids_of(*(
    c.name for c in FAULT_CLASSES.values() if "reboot" in c.ladder and "reset-gpu" not in c.ladder))

#: XIDs that usually come from the workload, not the GPU.
XID_APPLICATION: tuple[int, ...] = xids_of("application")


def xid_regex(codes: tuple[int, ...]) -> str:
    """A PromQL regex matching exactly these codes in `err_code`."""
    return "|".join(str(code) for code in codes)
