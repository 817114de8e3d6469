"""Per-pod GPU utilisation and memory on shared GPUs (`--kubernetes-virtual-gpus`), from NVML's per-process data.

When time-slicing or MPS lets several pods share one GPU, the device's `DCGM_FI_DEV_GPU_UTIL` and
`DCGM_FI_DEV_FB_USED` say nothing about which pod uses how much; copying them onto every pod's series would
count the GPU once per pod. dcgm-exporter splits them instead, and so does this module:

1. NVML lists the GPU's compute processes with their frame-buffer use, and its per-process utilisation samples
   (the latest SM utilisation of each pid);
2. each pid is mapped to its pod through `/proc/<pid>/cgroup` (which needs the host's PID namespace, `hostPID`):
   the kubelet's cgroup path names the pod UID (`.../pod<uid>/...`, or `kubepods-...-pod<uid with _>.slice` with
   the systemd driver) and ends with the container ID (`<id>`, `cri-containerd-<id>.scope`, `crio-<id>.scope`,
   `docker-<id>.scope`);
3. the pod UID is matched to the holding pods the kubelet's pod-resources answer names, through the API server's
   pods (namespace, name -> UID, and container ID -> container name from `status.containerStatuses`).

Each holding container then gets the sum over its processes: utilisation in percent, memory in MiB (floored,
like the device value). A process whose container cannot be told counts for its pod's first holding container,
so that the per-pod sums stay right; processes of pods that hold no replica of this GPU, and processes whose
pod is unknown, count for none. A holder without processes gets 0. MIG devices keep the device's values.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

from gpu_operator.agents.metrics_exporter.attribution import PodRef
from gpu_operator.agents.metrics_exporter.pod_metadata import PodMetadata
from gpu_operator.agents.nvml import ProcessSample
from gpu_operator.agents.nvml.inventory import MIB

__all__ = ["SPLIT_FIELDS", "GPU_UTIL_FIELD", "FB_USED_FIELD", "ProcessOwner", "owner_of", "split_values"]

GPU_UTIL_FIELD = "DCGM_FI_DEV_GPU_UTIL"
FB_USED_FIELD = "DCGM_FI_DEV_FB_USED"
SPLIT_FIELDS = (GPU_UTIL_FIELD, FB_USED_FIELD)

_POD_UID = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")
_CONTAINER = re.compile(r"^(?:cri-containerd-|crio-|docker-)?([0-9a-f]{64})(?:\.scope)?\Z")

#: (pod UID, container ID or "" when the cgroup path does not end with one)
ProcessOwner = tuple[str, str]
Values = dict[str, float]


def owner_of(proc_root: str, pid: int) -> ProcessOwner | None:
    """The pod (and container) a process belongs to, from its cgroup; None for processes outside any pod."""
    try:
        with open(os.path.join(proc_root, str(pid), "cgroup"), encoding="utf-8") as lines:
            paths = [line.rstrip("\n").split(":", 2)[-1] for line in lines]
    except OSError:
        return None
    for path in paths:
        found = _POD_UID.search(path)
        if found is None:
            continue
        container = _CONTAINER.match(path.rstrip("/").rsplit("/", 1)[-1])
        return found.group(1).replace("_", "-"), "" if container is None else container.group(1)
    return None


def _totals(processes: Sequence[ProcessSample], proc_root: str) -> dict[ProcessOwner, list[int]]:
    totals: dict[ProcessOwner, list[int]] = defaultdict(lambda: [0, 0])
    for process in processes:
        owner = owner_of(proc_root, process.pid)
        if owner is None:
            continue
        totals[owner][0] += process.sm_util_percent or 0
        totals[owner][1] += process.used_memory_bytes or 0
    return totals


def split_values(
    processes: Sequence[ProcessSample],
    holders: Sequence[PodRef],
    metadata: Mapping[tuple[str, str], PodMetadata],
    proc_root: str,
) -> list[Values]:
    """For each holder (in order), its share of the GPU: field name -> value."""
    totals = _totals(processes, proc_root)
    shares = [[0, 0] for _ in holders]
    first_of_pod: dict[str, int] = {}
    by_container: dict[tuple[str, str], int] = {}
    for position, holder in enumerate(holders):
        meta = metadata.get((holder.namespace, holder.pod))
        if meta is None:
            continue
        first_of_pod.setdefault(meta.uid, position)
        by_container.setdefault((meta.uid, holder.container), position)
    names = {meta.uid: meta.containers for meta in metadata.values()}
    for (uid, container_id), (util, memory) in totals.items():
        container = names.get(uid, {}).get(container_id, "")
        position = by_container.get((uid, container), first_of_pod.get(uid))
        if position is None:
            continue
        shares[position][0] += util
        shares[position][1] += memory
    return [{GPU_UTIL_FIELD: float(util), FB_USED_FIELD: float(memory // MIB)} for util, memory in shares]
