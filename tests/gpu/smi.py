"""What nvidia-smi says about the GPUs: the reference each agent's output is compared with.

`nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits` prints one CSV line per GPU; :func:`parse_smi`
turns that text into :class:`SmiGpu` records. A value nvidia-smi cannot read prints as `[N/A]` (or
`[Not Supported]`, `[Unknown Error]`), which becomes None.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from dataclasses import dataclass

__all__ = ["QUERY_FIELDS", "SmiError", "SmiGpu", "parse_smi", "query_smi"]

#: The fields asked of nvidia-smi, in column order.
QUERY_FIELDS = (
    "index", "uuid", "name", "pci.bus_id", "driver_version", "memory.total", "memory.used",
    "temperature.gpu", "power.draw", "utilization.gpu",
)


class SmiError(Exception):
    """nvidia-smi is missing, failed, or printed something that is not its CSV."""


@dataclass(frozen=True, slots=True)
class SmiGpu:
    """One GPU as nvidia-smi reports it (MiB, degrees C, watts, percent)."""

    index: int
    uuid: str
    name: str
    pci_bus_id: str
    driver_version: str
    memory_total_mib: float | None
    memory_used_mib: float | None
    temperature_c: float | None
    power_w: float | None
    utilization_pct: float | None


def _number(text: str) -> float | None:
    text = text.strip()
    if text.startswith("[") or not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise SmiError(f"nvidia-smi printed {text!r} where a number belongs") from None


def parse_smi(text: str) -> tuple[SmiGpu, ...]:
    """The GPUs of nvidia-smi's `--format=csv,noheader,nounits` output for :data:`QUERY_FIELDS`."""
    gpus = []
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if len(row) != len(QUERY_FIELDS):
            raise SmiError(f"nvidia-smi printed {len(row)} columns, {len(QUERY_FIELDS)} were asked for: {row}")
        cells = [cell.strip() for cell in row]
        index = _number(cells[0])
        if index is None:
            raise SmiError(f"nvidia-smi printed no index: {row}")
        gpus.append(SmiGpu(int(index), cells[1], cells[2], cells[3], cells[4], *map(_number, cells[5:])))
    return tuple(gpus)


def query_smi(program: str = "nvidia-smi", timeout: float = 60) -> tuple[SmiGpu, ...]:
    """Ask the installed nvidia-smi. Raises SmiError when it is not on PATH or fails."""
    path = shutil.which(program)
    if path is None:
        raise SmiError(f"{program} is not on PATH")
    done = subprocess.run([path, f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise SmiError(f"{program} exited with {done.returncode}: {done.stderr.strip() or done.stdout.strip()}")
    return parse_smi(done.stdout)
