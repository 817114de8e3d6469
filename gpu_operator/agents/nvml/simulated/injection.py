"""Faults injected into a running simulated node: one line per fault, read by the simulated library as it runs.

A test (or the e2e tier) names a file in `GPU_OPERATOR_NVML_FAULTS` and appends lines to it while the agents run;
every simulated library opened with that file reads the new lines on its next call. The file is the node's
hardware state: a library opened later (an agent that restarts, NVML opened again) applies the state lines
already there (a lost GPU stays lost) but does not deliver their XIDs again (an event happens once). A reset
of a GPU and a reboot of the node are written to the same file, so every reader sees them.

    xid <code> on GPU <i>                one XID critical-error event
    dbe on GPU <i>                       the volatile (and aggregate) double-bit ECC count grows by one
    row-remap-pending on GPU <i>         a row remapping waits for the next GPU reset
    row-remap-failed on GPU <i>          a row remapping failed
    nvlink-down <link> on GPU <i>        NVLink <link> reads inactive
    nvlink-crc <errors> on GPU <i>       the NVLink CRC flit error count grows by <errors>
    thermal on GPU <i>                   the thermal violation time grows by a second on every read
    recovery-action <value> on GPU <i>   NVML's GPU recovery action field reads <value> (XID 154's)
    lost on GPU <i>                      every call about the GPU answers "GPU is lost"
    process <pid> on GPU <i>             a compute process runs on the GPU
    exit <pid> on GPU <i>                it ends
    reset-fails on GPU <i>               resets of the GPU fail (until a reboot)
    reset on GPU <i>                     the GPU was reset: its faults and processes are gone
    driver-unloaded / driver-loaded      every call, nvmlInit included, answers "driver not loaded" / stops it
    reboot                               the node restarted: every fault is gone

`<i>` is the GPU's NVML index; blank lines and `#` comments are skipped. A line that does not parse is logged
and skipped by a running library (the writer may be another process); :func:`parse_injection` raises for it.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "FAULTS_ENV",
    "FaultFile",
    "InjectedState",
    "Injection",
    "InjectionError",
    "parse_injection",
]

_log = logging.getLogger(__name__)

#: The environment variable naming the fault file of a simulated node.
FAULTS_ENV = "GPU_OPERATOR_NVML_FAULTS"
#: Faults that take a number before `on GPU <i>`, and those that take none.
_WITH_VALUE = frozenset({"xid", "nvlink-down", "nvlink-crc", "recovery-action", "process", "exit"})
_PER_GPU = frozenset({"dbe", "row-remap-pending", "row-remap-failed", "thermal", "lost", "reset-fails", "reset"})
_NODE_WIDE = frozenset({"driver-unloaded", "driver-loaded", "reboot"})
_LINE = re.compile(r"(?P<kind>[a-z-]+)(?:\s+(?P<value>\d+))?(?:\s+on\s+GPU\s+(?P<gpu>\d+))?")
#: Nanoseconds of thermal violation added on every read of a GPU under `thermal`.
THERMAL_STEP_NS = 1_000_000_000


class InjectionError(ValueError):
    """A fault line that does not follow the grammar."""


@dataclass(frozen=True, slots=True)
class Injection:
    """One parsed line: the fault, its number (XID, link, count, value or pid) and its GPU (None: node-wide)."""

    kind: str
    value: int | None = None
    gpu: int | None = None

    @property
    def event(self) -> bool:
        """Whether the line is an event delivered once (an XID), rather than state."""
        return self.kind == "xid"


def parse_injection(line: str) -> Injection | None:
    """The fault a line injects; None for a blank or comment line. Raises InjectionError naming the problem."""
    text = line.split("#", 1)[0].strip()
    if not text:
        return None
    found = _LINE.fullmatch(text)
    if found is None:
        raise InjectionError(f"cannot read fault {line.strip()!r}: expected '<fault> [<number>] on GPU <index>'")
    kind, value, gpu = found.group("kind"), found.group("value"), found.group("gpu")
    if kind in _NODE_WIDE:
        if value is not None or gpu is not None:
            raise InjectionError(f"fault {kind!r} is node-wide: it takes no number and no GPU ({line.strip()!r})")
        return Injection(kind)
    if kind not in _WITH_VALUE | _PER_GPU:
        known = ", ".join(sorted(_WITH_VALUE | _PER_GPU | _NODE_WIDE))
        raise InjectionError(f"unknown fault {kind!r} in {line.strip()!r}: use one of {known}")
    if gpu is None:
        raise InjectionError(f"fault {kind!r} needs its GPU: '{kind} ... on GPU <index>' ({line.strip()!r})")
    if (kind in _WITH_VALUE) != (value is not None):
        form = f"{kind} <number> on GPU <index>" if kind in _WITH_VALUE else f"{kind} on GPU <index>"
        raise InjectionError(f"fault {kind!r} is written '{form}' ({line.strip()!r})")
    return Injection(kind, None if value is None else int(value), int(gpu))


@dataclass
class _GpuFaults:
    dbe: int = 0
    remap_pending: bool = False
    remap_failed: bool = False
    links_down: set[int] = field(default_factory=set)
    crc_errors: int = 0
    thermal: bool = False
    thermal_ns: int = 0
    recovery_action: int = 0
    lost: bool = False
    processes: set[int] = field(default_factory=set)
    reset_fails: bool = False


class InjectedState:
    """The injected state of every GPU of one node, and whether the driver is loaded."""

    def __init__(self, gpu_count: int) -> None:
        self._count = gpu_count
        self._gpus = [_GpuFaults() for _ in range(gpu_count)]
        self.driver_unloaded = False

    def gpu(self, index: int) -> _GpuFaults:
        return self._gpus[index]

    def apply(self, injection: Injection) -> None:
        """Apply a state line (an XID line changes no state; its delivery is the caller's)."""
        if injection.kind == "reboot":
            self._gpus = [_GpuFaults() for _ in range(self._count)]
            self.driver_unloaded = False
            return
        if injection.kind in ("driver-unloaded", "driver-loaded"):
            self.driver_unloaded = injection.kind == "driver-unloaded"
            return
        if injection.gpu is None or not 0 <= injection.gpu < self._count:
            _log.warning("simulated fault %r names no GPU of this node (0-%d)", injection, self._count - 1)
            return
        if injection.event:
            return
        self._apply_gpu(self._gpus[injection.gpu], injection)

    def _apply_gpu(self, gpu: _GpuFaults, injection: Injection) -> None:
        kind, value = injection.kind, injection.value or 0
        if kind == "reset":
            assert injection.gpu is not None
            self._gpus[injection.gpu] = _GpuFaults(reset_fails=gpu.reset_fails)
        elif kind == "dbe":
            gpu.dbe += 1
        elif kind == "nvlink-down":
            gpu.links_down.add(value)
        elif kind == "nvlink-crc":
            gpu.crc_errors += value
        elif kind == "recovery-action":
            gpu.recovery_action = value
        elif kind == "process":
            gpu.processes.add(value)
        elif kind == "exit":
            gpu.processes.discard(value)
        else:
            attribute = {"row-remap-pending": "remap_pending", "row-remap-failed": "remap_failed",
                         "thermal": "thermal", "lost": "lost", "reset-fails": "reset_fails"}[kind]
            setattr(gpu, attribute, True)


class FaultFile:
    """The fault file of one library: appends, and reads what was appended since the last read."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._offset = 0

    def read_new(self) -> list[Injection]:
        """The faults of the complete lines appended since the last read (a missing file has none yet)."""
        try:
            if self.path.stat().st_size <= self._offset:
                return []
            with self.path.open("rb") as stream:
                stream.seek(self._offset)
                data = stream.read()
        except OSError:
            return []
        complete = data[: data.rfind(b"\n") + 1]
        self._offset += len(complete)
        found = []
        for line in complete.decode(errors="replace").splitlines():
            try:
                injection = parse_injection(line)
            except InjectionError as error:
                _log.warning("%s: %s", self.path, error)
                continue
            if injection is not None:
                found.append(injection)
        return found

    def append(self, lines: Iterable[str]) -> None:
        """Append lines (each a fault) in one write, so a concurrent reader sees whole lines."""
        text = "".join(f"{line.rstrip()}\n" for line in lines)
        with self.path.open("a", encoding="utf-8") as stream:
            stream.write(text)
