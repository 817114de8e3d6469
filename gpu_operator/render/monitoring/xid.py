"""XID classes for the alerts: the XIDs after which a GPU needs a reset or its node a reboot, and workload XIDs.

dcgm-exporter reports the last XID of each GPU as `DCGM_FI_DEV_XID_ERRORS` with the code in the `err_code` label
(its `xid_errors.go` only names the codes; it does not class them). The classes here follow NVIDIA's XID catalog
("Analyzing the XID catalog", docs.nvidia.com/deploy/xid-errors), whose "immediate resolution" column says what an
operator does first:

* `RESET_GPU`: 46, 62, 64, 95, 109, 110, 119, 120 (GSP RPC timeout / GSP error, the usual H100 escalation to
  "GPU Reset Required"), 136, 140, 143, 155, 156, 158;
* `RESTART_BM` (reboot the machine): 79 (fallen off the bus); `RESTART_VM`: 151;
* workflows that end in a reset: 48 (double-bit ECC, with its DRAM/SRAM details 171 and 172 on newer drivers),
  74 (NVLink) and 144-150 (NVLink 5);
* 154 "GPU recovery action changed": the driver itself says the GPU now needs a reset, or the node a reboot;
* 169, the newer drivers' form of 62.

Kept from before as hardware faults although the catalog starts with a lighter action: 63 (a row remap that takes
effect at the next reset), 92 (high single-bit ECC rate, which precedes double-bit errors) and 94 (a contained
ECC error). Workload XIDs (13, 31, 43: the catalog's `RESTART_APP`/`IGNORE`) get their own warning.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["XID_APPLICATION", "XID_HARDWARE", "XID_RESET_OR_REBOOT", "xid_regex"]

#: XID -> what it needs: "reset" (the GPU) or "reboot" (the node).
XID_RESET_OR_REBOOT: Mapping[int, str] = {
    **{code: "reset" for code in (46, 48, 62, 64, 74, 95, 109, 110, 119, 120, 136, 140, 143)},
    **{code: "reset" for code in range(144, 151)},
    **{code: "reset" for code in (154, 155, 156, 158, 169, 171, 172)},
    79: "reboot",
    151: "reboot",
}

#: Every XID the hardware alert fires on: the reset/reboot class and the degrading-hardware XIDs.
XID_HARDWARE: tuple[int, ...] = tuple(sorted({*XID_RESET_OR_REBOOT, 63, 92, 94}))

#: XIDs that usually come from the workload, not the GPU.
XID_APPLICATION: tuple[int, ...] = (13, 31, 43)


def xid_regex(codes: tuple[int, ...]) -> str:
    """A PromQL regex matching exactly these codes in `err_code`."""
    return "|".join(str(code) for code in codes)
