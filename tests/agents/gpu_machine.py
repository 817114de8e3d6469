"""Whether this machine has an NVIDIA GPU, decided from the file system alone, never by the code under test.

The `gpu`-marked tests run our NVML layer, validator and exporters against the real driver. If they skipped
whenever our code could not open NVML, a broken loader on a GPU machine would read as "no GPU here" and every
real-driver test would quietly skip. So the decision is made here, from two kinds of evidence the kernel module
and the driver installer leave behind:

* a device node `/dev/nvidia<N>` (one per GPU, made by the kernel module or `nvidia-modprobe`), or `/dev/dxg`
  together with WSL's NVML (WSL2 exposes GPUs through the DirectX kernel interface, not `/dev/nvidia*`);
* `libnvidia-ml.so.1` where the dynamic loader would find it (`/etc/ld.so.cache`, `LD_LIBRARY_PATH`, the
  default library directories) or under a driver root the GPU operator's containers mount.

A machine with either has a GPU as far as the tests are concerned: from then on, an exception raised by our code
is a failure. `GPU_REQUIRED=1` goes further and makes a machine without any of this a failure too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DRIVER_ROOTS",
    "GPU_REQUIRED_ENV",
    "LIBRARY",
    "LIBRARY_DIRS",
    "GpuEvidence",
    "find_gpu_evidence",
    "gpu_required",
]

GPU_REQUIRED_ENV = "GPU_REQUIRED"
LIBRARY = "libnvidia-ml.so.1"

#: Library directories the loader searches by default, the distributions' multiarch ones, and WSL's.
LIBRARY_DIRS: tuple[str, ...] = (
    "lib",
    "lib64",
    "usr/lib",
    "usr/lib64",
    "lib/x86_64-linux-gnu",
    "lib/aarch64-linux-gnu",
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "usr/lib/wsl/lib",
)

#: Where the driver lives besides the root file system: the driver container's install dir (the host side and
#: the path GPU operator containers mount it at) and the host root mounted into a container.
DRIVER_ROOTS: tuple[str, ...] = ("run/nvidia/driver", "driver-root", "host")

_DEVICE_NODE = re.compile(r"nvidia\d+")
_CACHED_LIBRARY = re.compile(rb"(/[^\0]*/" + re.escape(LIBRARY.encode()) + rb")\0")

_TRUE = frozenset({"1", "true", "yes"})
_FALSE = frozenset({"", "0", "false", "no"})


@dataclass(frozen=True, slots=True)
class GpuEvidence:
    """What the file system shows of NVIDIA GPUs: device nodes and NVML libraries, as paths."""

    device_nodes: tuple[str, ...]
    libraries: tuple[str, ...]

    @property
    def present(self) -> bool:
        return bool(self.device_nodes or self.libraries)

    def describe(self) -> str:
        if not self.present:
            return f"no /dev/nvidia<N> device node and no {LIBRARY} for the dynamic loader or under a driver root"
        found = [*self.device_nodes, *self.libraries]
        return "found " + ", ".join(found)


def _device_nodes(root: Path) -> tuple[str, ...]:
    dev = root / "dev"
    try:
        names = sorted(entry.name for entry in os.scandir(dev))
    except OSError:
        return ()
    nodes = [str(dev / name) for name in names if _DEVICE_NODE.fullmatch(name)]
    # /dev/dxg alone is any WSL2 GPU (AMD and Intel too); with WSL's NVML next to it, it is an NVIDIA one.
    if "dxg" in names and os.path.lexists(root / "usr/lib/wsl/lib" / LIBRARY):
        nodes.append(str(dev / "dxg"))
    return tuple(nodes)


def _cached_libraries(root: Path) -> list[str]:
    try:
        cache = (root / "etc/ld.so.cache").read_bytes()
    except OSError:
        return []
    return [match.decode(errors="replace") for match in _CACHED_LIBRARY.findall(cache)]


def _libraries(root: Path, environ: Mapping[str, str]) -> tuple[str, ...]:
    candidates = [*_cached_libraries(root)]
    candidates += [os.path.join(d, LIBRARY) for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    for driver_root in ("", *DRIVER_ROOTS):
        candidates += [str(root / driver_root / directory / LIBRARY) for directory in LIBRARY_DIRS]
    found: list[str] = []
    for candidate in candidates:
        # The cache names host paths; under a test's fake root they are read relative to it.
        path = candidate if candidate.startswith(str(root)) else str(root / candidate.lstrip("/"))
        if os.path.lexists(path) and path not in found:
            found.append(path)
    return tuple(found)


def find_gpu_evidence(root: str | Path = "/", environ: Mapping[str, str] | None = None) -> GpuEvidence:
    """The NVIDIA device nodes and NVML libraries under `root` (the machine's own root by default)."""
    base = Path(root)
    env = os.environ if environ is None else environ
    return GpuEvidence(_device_nodes(base), _libraries(base, env))


def gpu_required(environ: Mapping[str, str] | None = None) -> bool:
    """`GPU_REQUIRED`: true when every `gpu` test must run here. Raises ValueError for a value that means neither."""
    env = os.environ if environ is None else environ
    value = env.get(GPU_REQUIRED_ENV, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(
        f"{GPU_REQUIRED_ENV}={env[GPU_REQUIRED_ENV]!r} is neither on nor off: set {GPU_REQUIRED_ENV}=1 to make a "
        f"machine without a GPU fail the `gpu` tests, or leave it unset (or 0) to skip them there"
    )
