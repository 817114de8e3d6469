"""When readings count: not while the driver starts, and what a missing validation says about the driver.

While the operands start, NVML answers oddly: the library is missing, init fails, GPUs read lost, NVLinks are not
trained yet. None of that is a fault. The operator validator writes `driver-ready` in `/run/nvidia/validations`
once the driver works (NVIDIA/gpu-operator cmd/nvidia-validator `validateDriver`); until then, and for a grace
period after the file appeared, the health readings and NVML's start-up errors make no finding. XIDs always count
(except the application's, which the catalog never quarantines): the driver raises them for a reason.

After the driver was validated, the validator's files speak for the driver: `driver-ready` gone for longer than the
grace period means the validator runs again and does not pass (its pod deletes the file when it starts a check
and when it stops, `preStop`), which is a `ValidatorFailed` finding. A node whose driver is being upgraded
(`nvidia.com/gpu-driver-upgrade-state` in progress) is expected to lose the file, and makes none.

Without a validations directory (`--validations-dir ''`, simulated nodes) the driver counts as validated when the
monitor starts.

The monitor also steps aside, NVML closed and no readings at all, while NVIDIA's driver manager or MIG manager has
paused the GPU operands (a deploy label holds `paused-for-driver-upgrade` or `paused-for-mig-change`): the driver
is about to be unloaded or the GPUs reset into a new MIG mode, and an NVML client holding the GPUs open would stop
both, which is why those managers pause the operands in the first place.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["DRIVER_READY", "UPGRADE_STATE_LABEL", "Bootstrap", "standing_aside", "upgrading"]

DRIVER_READY = "driver-ready"
UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
#: Upgrade states in which the driver is not being replaced.
_SETTLED_UPGRADE_STATES = frozenset({"", "upgrade-done", "upgrade-failed"})


_DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
#: The pause values of NVIDIA's driver manager (k8s-driver-manager) and MIG manager (mig-parted reconfigure).
_PAUSES = ("paused-for-driver-upgrade", "paused-for-mig-change")


def standing_aside(labels: Mapping[str, str]) -> str | None:
    """Why the monitor must let go of the GPUs now (an operand paused for a driver or MIG change), else None."""
    for key, value in sorted(labels.items()):
        pause = next((p for p in _PAUSES if key.startswith(_DEPLOY_PREFIX) and p in value), None)
        if pause is not None:
            return f"{key}={value}"
    return None


def upgrading(labels: Mapping[str, str]) -> bool:
    """Whether the driver upgrade holds the node (its driver pod may be down, its validation files gone)."""
    return labels.get(UPGRADE_STATE_LABEL, "") not in _SETTLED_UPGRADE_STATES


class Bootstrap:
    """The driver's validation as the monitor sees it: since when it holds, and whether readings count yet."""

    def __init__(self, validations_dir: str | None, grace_seconds: float, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._ready = Path(validations_dir) / DRIVER_READY if validations_dir else None
        self._grace = grace_seconds
        self._clock = clock
        self._started = clock()
        self._seen = False
        self._missing_since: float | None = None

    def validated_at(self) -> float | None:
        """When the driver was validated (the file's time; the monitor's start without a validations directory)."""
        if self._ready is None:
            return self._started
        try:
            stamp = self._ready.stat().st_mtime
        except OSError:
            return None
        self._seen = True
        return stamp

    def settled(self) -> bool:
        """Whether readings count: the driver validated, and the grace period after it over."""
        validated = self.validated_at()
        now = self._clock()
        if validated is None:
            if self._seen and self._missing_since is None:
                self._missing_since = now
            return False
        self._missing_since = None
        return now - validated >= self._grace

    def validation_lost(self) -> str | None:
        """Why the validation counts as failed (its file gone for longer than the grace period), else None."""
        self.settled()
        if self._missing_since is None or self._ready is None:
            return None
        gone = self._clock() - self._missing_since
        if gone < self._grace:
            return None
        return f"{self._ready} gone for {gone:.0f} s after the driver was validated"
