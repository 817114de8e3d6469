"""One collection's readings as a scrape body, label for label as dcgm-exporter 4.8 renders it.

For every collected field (in any order; families come out sorted by name) and every entity with a value, one
sample per variant, labelled:

    <identity labels> + <label-type fields and pod labels, sorted by name> + <attributes, sorted by name>

where attributes are the pod/job labels of the variant and, for `DCGM_FI_DEV_XID_ERRORS`, `err_code` and
`err_msg`. A variant may carry its own value of a field (a pod's share of a shared GPU). Integer fields print as
integers; double fields are first rounded to six decimals (DCGM formats
them with `%f`), then printed in Go's shortest form. Samples within a family are ordered by dcgm-exporter's
label signature (:func:`~gpu_operator.agents.exposition.label_signature`). Label blocks are formatted once and
reused across cycles (:class:`LabelBlocks`), so a cycle mostly formats values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpu_operator.agents.exposition import (
    Family,
    FormattedSample,
    LabelBlock,
    Labels,
    render_families,
)
from gpu_operator.agents.metrics_exporter.counters import Counter
from gpu_operator.agents.metrics_exporter.entities import Entity
from gpu_operator.agents.metrics_exporter.fields import FIELD_SOURCES, ValueKind
from gpu_operator.agents.metrics_exporter.readings import EntityReading
from gpu_operator.agents.metrics_exporter.variants import Variant
from gpu_operator.agents.metrics_exporter.xid import xid_labels

__all__ = [
    "XID_FIELD",
    "EntitySeries",
    "LabelBlocks",
    "build_families",
    "exposed_value",
    "render_metrics",
    "series_labels",
]

XID_FIELD = "DCGM_FI_DEV_XID_ERRORS"


@dataclass(frozen=True, slots=True)
class EntitySeries:
    """An entity with its reading this cycle, its label-type field labels and its variants."""

    entity: Entity
    reading: EntityReading
    field_labels: Labels
    variants: tuple[Variant, ...]


def exposed_value(kind: ValueKind, raw: float) -> float:
    """The value as dcgm-exporter exposes it: integers as is, doubles via `%f` (six decimals)."""
    return int(raw) if kind is ValueKind.INT else float(f"{raw:f}")


def series_labels(entity_labels: Labels, field_labels: Labels, variant: Variant, extra: Labels = ()) -> Labels:
    return (
        entity_labels
        + tuple(sorted(field_labels + variant.labels))
        + tuple(sorted(variant.attributes + extra))
    )


_BlockKey = tuple[Labels, Labels, Labels, Labels, Labels]


class LabelBlocks:
    """Formatted label blocks of the series, kept from one cycle to the next while the series lives on.

    Labels rarely change between cycles, so each distinct label set is formatted (and its sort signature
    computed) once. Blocks not used in a cycle are dropped at the next one, so memory follows the live series.
    """

    def __init__(self) -> None:
        self._current: dict[_BlockKey, LabelBlock] = {}
        self._previous: dict[_BlockKey, LabelBlock] = {}

    def next_cycle(self) -> None:
        self._previous, self._current = self._current, {}

    def block(self, item: EntitySeries, variant: Variant, extra: Labels) -> LabelBlock:
        key = (item.entity.labels, item.field_labels, variant.labels, variant.attributes, extra)
        found = self._current.get(key) or self._previous.get(key)
        if found is None:
            found = LabelBlock.of(series_labels(item.entity.labels, item.field_labels, variant, extra))
        self._current[key] = found
        return found


def _samples(counter: Counter, series: Sequence[EntitySeries], blocks: LabelBlocks) -> list[FormattedSample]:
    source = FIELD_SOURCES[counter.name]
    samples: list[FormattedSample] = []
    for item in series:
        raw = source.read(item.reading)
        if raw is None:
            continue
        value = exposed_value(source.kind, raw)
        extra = xid_labels(int(raw)) if counter.name == XID_FIELD else ()
        for variant in item.variants:
            own = value if not variant.values else exposed_value(source.kind, variant.value(counter.name, raw))
            samples.append(FormattedSample(blocks.block(item, variant, extra), own))
    samples.sort(key=lambda sample: sample.block.signature)
    return samples


def build_families(
    counters: Sequence[Counter], series: Sequence[EntitySeries], blocks: LabelBlocks | None = None
) -> list[Family]:
    """A family per metric counter this exporter can fill (label-type and unknown fields produce none)."""
    cache = blocks or LabelBlocks()
    cache.next_cycle()
    return [
        Family(counter.name, counter.help, counter.type, _samples(counter, series, cache))
        for counter in counters
        if not counter.is_label and counter.name in FIELD_SOURCES
    ]


def render_metrics(
    counters: Sequence[Counter], series: Sequence[EntitySeries], blocks: LabelBlocks | None = None
) -> bytes:
    return render_families(build_families(counters, series, blocks))
