"""Rendering series: label order, XID attributes, and label blocks reused across cycles."""

from __future__ import annotations

from gpu_operator.agents.metrics_exporter.counters import Counter
from gpu_operator.agents.metrics_exporter.entities import (
    IdentityOptions,
    build_entities,
)
from gpu_operator.agents.metrics_exporter.readings import EntityReading
from gpu_operator.agents.metrics_exporter.render import (
    EntitySeries,
    LabelBlocks,
    build_families,
    series_labels,
)
from gpu_operator.agents.metrics_exporter.variants import IDLE, Variant
from gpu_operator.agents.nvml import GpuSample, open_nvml

GPUS = open_nvml("fake:t4-1x").devices()
(ENTITY,) = build_entities(GPUS, IdentityOptions("node-a"))
FIELDS = (("DCGM_FI_DRIVER_VERSION", "535.247.01"),)
COUNTERS = (
    Counter("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    Counter("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    Counter("DCGM_FI_DRIVER_VERSION", "label", "Driver Version"),
    Counter("DCGM_FI_DEV_NOT_FROM_NVML", "gauge", "unknown here"),
)


def series(xid: int, variants: tuple[Variant, ...] = (IDLE,)) -> list[EntitySeries]:
    reading = EntityReading(GpuSample(0, GPUS[0].uuid, 0.0, gpu_temp_c=41), None, xid=xid)
    return [EntitySeries(ENTITY, reading, FIELDS, variants)]


def test_labels_identity_then_sorted_labels_then_sorted_attributes() -> None:
    variant = Variant((("team", "a"),), (("pod", "p"), ("namespace", "n"), ("container", "c")))
    names = [name for name, _ in series_labels(ENTITY.labels, FIELDS, variant, (("err_code", "0"),))]
    assert names == ["gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname",
                     "DCGM_FI_DRIVER_VERSION", "team", "container", "err_code", "namespace", "pod"]


def test_families_and_xid_attributes() -> None:
    families = {f.name: f for f in build_families(COUNTERS, series(xid=48))}
    assert set(families) == {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS"}
    (xid,) = families["DCGM_FI_DEV_XID_ERRORS"].samples
    assert xid.value == 48
    assert xid.label_text.endswith(',DCGM_FI_DRIVER_VERSION="535.247.01",err_code="48",err_msg="Double Bit ECC Error"}')


def test_label_blocks_are_reused_while_their_series_live() -> None:
    blocks = LabelBlocks()
    first = build_families(COUNTERS[:1], series(0), blocks)[0].samples[0]
    again = build_families(COUNTERS[:1], series(0), blocks)[0].samples[0]
    assert again.block is first.block
    held = Variant((), (("pod", "p"),))
    build_families(COUNTERS[:1], series(0, (held,)), blocks)
    build_families(COUNTERS[:1], series(0, (held,)), blocks)
    after = build_families(COUNTERS[:1], series(0), blocks)[0].samples[0]
    assert after.block is not first.block and after.block == first.block  # dropped once unused, rebuilt equal
