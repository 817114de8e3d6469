"""The label variants of an entity's series: who uses the GPU (pods, HPC jobs) in the current cycle.

An idle GPU has one series per field. A GPU held by a pod gets `pod`, `namespace` and `container` attributes
(`pod_name`, `pod_namespace`, `container_name` with `--use-old-namespace`), plus `pod_uid` and the pod's labels
when those options are on; with shared devices (`--kubernetes-virtual-gpus`) there is one series per holding
container, with the replica in `vgpu`; with HPC job mapping one series per job, with `hpc_job`. A
:class:`Variant` is one such combination: extra *labels* (pod labels, which dcgm-exporter sorts in with the
label-type fields) and *attributes* (written after them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpu_operator.agents.exposition import Labels
from gpu_operator.agents.metrics_exporter.attribution import PodRef
from gpu_operator.agents.metrics_exporter.hpc_jobs import HPC_JOB_LABEL
from gpu_operator.agents.metrics_exporter.pod_metadata import LabelRules, PodMetadata

__all__ = ["IDLE", "POD_UID_LABEL", "VGPU_LABEL", "PodLabelling", "Variant", "pod_variant", "with_jobs"]

POD_UID_LABEL = "pod_uid"
VGPU_LABEL = "vgpu"
_NAMES = ("pod", "namespace", "container")
_OLD_NAMES = ("pod_name", "pod_namespace", "container_name")


@dataclass(frozen=True, slots=True)
class Variant:
    """`values` replaces the entity's value of a field for this variant only (a holder's share of a shared GPU)."""

    labels: Labels = ()
    attributes: Labels = ()
    values: tuple[tuple[str, float], ...] = ()

    def value(self, field_name: str, entity_value: float) -> float:
        return next((v for name, v in self.values if name == field_name), entity_value)


IDLE = Variant()


@dataclass(frozen=True, slots=True)
class PodLabelling:
    """How pod holders turn into labels (the `--kubernetes-*` and `--use-old-namespace` options)."""

    use_old_namespace: bool = False
    pod_uid: bool = False
    pod_labels: bool = False
    rules: LabelRules = field(default_factory=LabelRules)


def pod_variant(
    pod: PodRef,
    metadata: Mapping[tuple[str, str], PodMetadata],
    labelling: PodLabelling,
    taken: Sequence[str],
) -> Variant:
    """The variant of a series held by `pod`; `taken` are label names the series already uses."""
    names = _OLD_NAMES if labelling.use_old_namespace else _NAMES
    attributes = list(zip(names, (pod.pod, pod.namespace, pod.container), strict=True))
    meta = metadata.get((pod.namespace, pod.pod))
    if labelling.pod_uid:
        attributes.append((POD_UID_LABEL, "" if meta is None else meta.uid))
    if pod.vgpu:
        attributes.append((VGPU_LABEL, pod.vgpu))
    labels: Labels = ()
    if labelling.pod_labels and meta is not None:
        labels = labelling.rules.labels(meta.labels, [*taken, *(name for name, _ in attributes)])
    return Variant(labels, tuple(attributes))


def with_jobs(variants: Sequence[Variant], jobs: Sequence[str]) -> tuple[Variant, ...]:
    """Each variant once per HPC job (unchanged when the GPU has no job file)."""
    if not jobs:
        return tuple(variants)
    return tuple(
        Variant(v.labels, (*v.attributes, (HPC_JOB_LABEL, job)), v.values) for v in variants for job in jobs
    )
