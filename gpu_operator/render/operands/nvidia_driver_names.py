"""The names NVIDIA's NVIDIADriver controller gives the objects of one driver on one node pool.

gpu-operator v26.7.0, `internal/state/driver.go`:

* `getDriverName`: `nvidia-<driverType>-driver-<cr>-<osTag>` (`nvidia-vgpu-manager-<cr>-<osTag>` for the vGPU host
  manager), cut at 253 characters: the ServiceAccount, ClusterRole and ClusterRoleBinding of the node pool;
* `getDriverAppName`: `nvidia-<driverType>-driver-<osTag>-<hash>`, where the hash is `utils.GetStringHash` of
  the NVIDIADriver's uid (with `-<kernel>` appended for a precompiled pool): FNV-1a (32 bit) of that string,
  its decimal digits written with apimachinery's `rand.SafeEncodeString` (each digit mapped into
  `bcdfghjklmnpqrstvwxz2456789`). The prefix is cut so the whole fits a 63-character label value. It names the
  DaemonSet and is its `app` label and selector.

A driver written here has no NVIDIADriver object, hence no uid, unless it was imported from one (`uid`). A stand-in
derived from the driver's name keeps the DaemonSet names stable from one render to the next.
"""

from __future__ import annotations

import uuid

__all__ = ["driver_name", "driver_app_name", "string_hash", "stand_in_uid"]

_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193
_NAME_MAX, _APP_NAME_MAX = 253, 63
#: The namespace of the stand-in uids (a fixed UUID of ours: uuid5 of the package name in the URL namespace).
_STAND_IN_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/pulumi-gpu-operator/nvidiadriver")


def string_hash(text: str) -> str:
    """NVIDIA's `utils.GetStringHash`: FNV-1a 32 of the text, its decimal form safe-encoded."""
    value = _FNV_OFFSET
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return "".join(_ALPHANUMS[ord(digit) % len(_ALPHANUMS)] for digit in str(value))


def driver_name(cr: str, driver_type: str, os_tag: str) -> str:
    """The ServiceAccount / ClusterRole name of one node pool of an NVIDIADriver."""
    name = f"nvidia-vgpu-manager-{cr}-{os_tag}" if driver_type == "vgpu-host-manager" \
        else f"nvidia-{driver_type}-driver-{cr}-{os_tag}"
    return name[:_NAME_MAX]


def driver_app_name(driver_type: str, os_tag: str, uid: str, kernel: str | None = None) -> str:
    """The DaemonSet name (and `app` label) of one node pool of an NVIDIADriver."""
    prefix = f"nvidia-{driver_type}-driver-{os_tag}"
    digest = string_hash(f"{uid}-{kernel}" if kernel else uid)
    name = f"{prefix}-{digest}"
    if len(name) > _APP_NAME_MAX:
        name = f"{prefix[:_APP_NAME_MAX - len(digest) - 1]}-{digest}"
    return name


def stand_in_uid(name: str) -> str:
    """A uid for a driver that no NVIDIADriver object ever had: derived from its name, the same at every render."""
    return str(uuid.uuid5(_STAND_IN_NAMESPACE, name))
