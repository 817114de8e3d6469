"""One collection cycle: read the node once, attribute GPUs to pods, render the scrape body.

The collector is built once from the inventory (the entities, their identity and label-type field labels never
change while the exporter runs; a MIG reconfiguration restarts dcgm-exporter, and SIGHUP rebuilds this
collector). Each `collect()` then takes one NVML sampling pass, the GPM readings since the previous cycle,
the last XIDs, the licence states, the pod holding each GPU (kubelet pod-resources, plus the API server for pod
UIDs and labels) and the HPC job files, and returns a :class:`~gpu_operator.agents.exposition.Snapshot`. With
shared GPUs (`--kubernetes-virtual-gpus`) the pass also reads each GPU's processes, and each holding pod's
series carry its own share of utilisation and memory, with its `pod_uid` (:mod:`.process_split`).

A GPU the sampling pass reports lost contributes no series and makes the snapshot degraded with a reason; the
other GPUs are unaffected. Failing to ask the kubelet or the API server only drops the pod labels for that
cycle (with a warning), as in dcgm-exporter. Any other failure propagates: the loop keeps the last body.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from gpu_operator.agents.exposition import HEALTHY, Health, Labels, Snapshot
from gpu_operator.agents.kubelet import PodResourcesError, PodResourcesSource
from gpu_operator.agents.metrics_exporter.attribution import (
    mig_keys,
    pods_by_device,
    pods_sharing_device,
)
from gpu_operator.agents.metrics_exporter.counters import Counter
from gpu_operator.agents.metrics_exporter.entities import (
    Entity,
    IdentityOptions,
    build_entities,
)
from gpu_operator.agents.metrics_exporter.fields import FIELD_SOURCES, LABEL_SOURCES
from gpu_operator.agents.metrics_exporter.hpc_jobs import read_job_mapping
from gpu_operator.agents.metrics_exporter.pod_metadata import (
    PodMetadata,
    PodMetadataError,
    PodMetadataSource,
)
from gpu_operator.agents.metrics_exporter.process_split import split_values
from gpu_operator.agents.metrics_exporter.rates import NvlinkRates
from gpu_operator.agents.metrics_exporter.readings import EntityReading
from gpu_operator.agents.metrics_exporter.render import (
    EntitySeries,
    LabelBlocks,
    render_metrics,
)
from gpu_operator.agents.metrics_exporter.variants import (
    IDLE,
    PodLabelling,
    Variant,
    pod_variant,
    with_jobs,
)
from gpu_operator.agents.metrics_exporter.xid import XidTracker
from gpu_operator.agents.nvml import GpuInfo, GpuSample, MemoryInfo, Nvml, SystemInfo
from gpu_operator.agents.nvml.gpm import GpmTarget

__all__ = ["Attribution", "Collector", "GpmReader", "Sources", "field_labels", "lost_reason"]

_log = logging.getLogger(__name__)


class GpmReader(Protocol):
    def read(self) -> Mapping[GpmTarget, Mapping[int, float]]: ...


@dataclass(frozen=True, slots=True)
class Attribution:
    """Who-uses-the-GPU options: Kubernetes pods (`--kubernetes`, ...) and HPC job files."""

    kubernetes: bool = False
    virtual_gpus: bool = False
    resource_names: tuple[str, ...] = ()
    labelling: PodLabelling = field(default_factory=PodLabelling)
    hpc_job_dir: str | None = None
    proc_root: str = "/proc"

    @property
    def needs_pod_metadata(self) -> bool:
        """Pod UIDs or labels are asked for, or shared GPUs are split per pod (which finds pods by UID)."""
        return self.labelling.pod_uid or self.labelling.pod_labels or self.virtual_gpus

    @property
    def pod_labelling(self) -> PodLabelling:
        """Split series of shared GPUs always say whose share they are (`pod_uid`)."""
        return replace(self.labelling, pod_uid=True) if self.virtual_gpus else self.labelling


@dataclass
class Sources:
    """The I/O edges a collection reads; only `nvml` is required."""

    nvml: Nvml
    pods: PodResourcesSource | None = None
    pod_metadata: PodMetadataSource | None = None
    xids: XidTracker | None = None
    gpm: GpmReader | None = None
    licenses: Callable[[int], int | None] | None = None
    clock: Callable[[], float] = field(default=time.time)


def field_labels(counters: Sequence[Counter], gpu: GpuInfo, system: SystemInfo) -> Labels:
    """The label-type fields of the collectors file, with their values for this GPU (unknown or blank: none)."""
    labels = []
    for counter in counters:
        source = LABEL_SOURCES.get(counter.name) if counter.is_label else None
        value = None if source is None else source.read(gpu, system)
        if value:
            labels.append((counter.name, value))
    return tuple(labels)


def lost_reason(gpu: GpuInfo | GpuSample) -> str:
    return f"GPU {gpu.index} ({gpu.uuid or 'unknown UUID'}) is lost: its metrics are no longer reported"


def _instance_memory(sample: GpuSample, gpu_instance_id: int) -> MemoryInfo | None:
    return next((m.memory for m in sample.mig if m.gpu_instance_id == gpu_instance_id), None)


class Collector:
    """Collects the node described by `sources` into snapshots of `counters`."""

    def __init__(
        self,
        sources: Sources,
        counters: Sequence[Counter],
        identity: IdentityOptions,
        attribution: Attribution = Attribution(),
    ) -> None:
        self._sources = sources
        self._counters = tuple(counters)
        self._attribution = attribution
        self.gpus: tuple[GpuInfo, ...] = sources.nvml.devices()
        self.system: SystemInfo = sources.nvml.system()
        self.entities: tuple[Entity, ...] = build_entities(self.gpus, identity)
        self._field_labels = {e.key: field_labels(self._counters, e.gpu, self.system) for e in self.entities}
        self._mig_keys = mig_keys(self.gpus)
        self._rates = NvlinkRates()
        self._blocks = LabelBlocks()
        skipped = [c.name for c in self._counters if c.name not in FIELD_SOURCES and c.name not in LABEL_SOURCES]
        if skipped:
            _log.warning("fields without an NVML source are not collected: %s", ", ".join(skipped))

    @property
    def counters(self) -> tuple[Counter, ...]:
        return self._counters

    # -- pods and jobs --------------------------------------------------------------------------------------

    def _holders(self, samples: Mapping[int, GpuSample]) -> Mapping[str, list[Variant]] | None:
        """Entity key -> pod variants this cycle, or None when no kubelet answered."""
        pods = self._sources.pods
        if not self._attribution.kubernetes or pods is None:
            return None
        try:
            allocations = pods.list_devices()
        except PodResourcesError as error:
            _log.warning("no pod labels this cycle: %s", error)
            return None
        if allocations is None:
            return None
        names = self._attribution.resource_names
        if self._attribution.virtual_gpus:
            holders = pods_sharing_device(allocations, self._mig_keys, names)
        else:
            holders = {key: [pod] for key, pod in pods_by_device(allocations, self._mig_keys, names).items()}
        metadata = self._pod_metadata() if holders else {}
        labelling = self._attribution.pod_labelling
        variants: dict[str, list[Variant]] = {}
        for entity in self.entities:
            held = holders.get(entity.key)
            if not held:
                continue
            variants[entity.key] = [pod_variant(pod, metadata, labelling, self._taken(entity)) for pod in held]
            sample = samples.get(entity.index)
            # without the API server's pods no process can be told apart: the series keep the device's values
            if self._attribution.virtual_gpus and metadata and entity.gpu_instance_id is None and sample is not None:
                shares = split_values(sample.processes, held, metadata, self._attribution.proc_root)
                own = zip(variants[entity.key], shares, strict=True)
                variants[entity.key] = [replace(v, values=tuple(share.items())) for v, share in own]
        return variants

    def _pod_metadata(self) -> Mapping[tuple[str, str], PodMetadata]:
        source = self._sources.pod_metadata
        if not self._attribution.needs_pod_metadata or source is None:
            return {}
        try:
            return source.pods()
        except PodMetadataError as error:
            _log.warning("no pod UIDs or labels this cycle: %s", error)
            return {}

    def _taken(self, entity: Entity) -> list[str]:
        return [name for name, _ in entity.labels + self._field_labels[entity.key]]

    def _variants(
        self, entity: Entity, holders: Mapping[str, list[Variant]] | None, jobs: Mapping[int, tuple[str, ...]]
    ) -> tuple[Variant, ...]:
        pods = None if holders is None else holders.get(entity.key)
        return with_jobs(pods or [IDLE], jobs.get(entity.index, ()))

    # -- one cycle ------------------------------------------------------------------------------------------

    def _reading(
        self, entity: Entity, sample: GpuSample, rate: int | None, gpm: Mapping[GpmTarget, Mapping[int, float]]
    ) -> EntityReading:
        instance = entity.gpu_instance_id
        xids, licenses = self._sources.xids, self._sources.licenses
        return EntityReading(
            sample=sample,
            memory=sample.memory if instance is None else _instance_memory(sample, instance),
            xid=0 if xids is None else xids.last(entity.index, instance),
            nvlink_rate=rate,
            gpm=gpm.get(GpmTarget(entity.index, instance), {}),
            license_status=None if licenses is None else licenses(entity.index),
        )

    def collect(self) -> Snapshot:
        """One cycle. Raises whatever NVML raises node-wide; a lost GPU only marks the snapshot degraded."""
        nvml = self._sources.nvml
        split = self._attribution.kubernetes and self._attribution.virtual_gpus
        samples = {sample.index: sample for sample in (nvml.sample(processes=True) if split else nvml.sample())}
        gpm = self._sources.gpm.read() if self._sources.gpm is not None else {}
        rates = {index: self._rates.update(sample) for index, sample in samples.items() if not sample.lost}
        holders = self._holders(samples)
        jobs = read_job_mapping(self._attribution.hpc_job_dir) if self._attribution.hpc_job_dir else {}
        series: list[EntitySeries] = []
        lost: dict[int, str] = {}
        for entity in self.entities:
            sample = samples.get(entity.index)
            if sample is None or sample.lost:
                lost[entity.index] = lost_reason(sample or entity.gpu)
                continue
            reading = self._reading(entity, sample, rates.get(entity.index), gpm)
            variants = self._variants(entity, holders, jobs)
            series.append(EntitySeries(entity, reading, self._field_labels[entity.key], variants))
        body = render_metrics(self._counters, series, self._blocks)
        health = Health.degraded(*(lost[i] for i in sorted(lost))) if lost else HEALTHY
        return Snapshot(body, health, self._sources.clock())
