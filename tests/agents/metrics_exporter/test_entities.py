"""Entities and their identity labels under dcgm-exporter's options."""

from __future__ import annotations

from dataclasses import replace

from gpu_operator.agents.metrics_exporter.entities import (
    DEVICE_NAME,
    IdentityOptions,
    build_entities,
    gpu_instance_profile,
    model_label,
)
from gpu_operator.agents.nvml import open_nvml

T4 = open_nvml("fake:t4-1x").devices()
MIXED = open_nvml("fake:a100-4x-mixed-mig").devices()


def test_a_gpu_is_one_entity_keyed_by_uuid() -> None:
    (entity,) = build_entities(T4, IdentityOptions("node-a"))
    assert entity.labels == (
        ("gpu", "0"),
        ("UUID", "GPU-d3615794-4e42-4b5f-9960-d8fc0896b3bd"),
        ("pci_bus_id", "00000001:00:00.0"),
        ("device", "nvidia0"),
        ("modelName", "Tesla T4"),
        ("hostname", "node-a"),
    )
    assert (entity.key, entity.gpu_instance_id) == ("GPU-d3615794-4e42-4b5f-9960-d8fc0896b3bd", None)


def test_options_shape_the_labels() -> None:
    options = IdentityOptions(None, use_old_namespace=True, replace_blanks_in_model_name=True, gpu_id_type=DEVICE_NAME)
    (entity,) = build_entities(T4, options)
    assert [name for name, _ in entity.labels] == ["gpu", "uuid", "pci_bus_id", "device", "modelName"]
    assert dict(entity.labels)["modelName"] == "Tesla-T4"
    assert entity.key == "nvidia0"
    assert model_label("NVIDIA  H100 80GB   HBM3", True) == "NVIDIA-H100-80GB-HBM3"


def test_mig_enabled_gpus_are_monitored_through_their_gpu_instances() -> None:
    entities = build_entities(MIXED, IdentityOptions("node-a"))
    assert [(e.index, e.gpu_instance_id, e.key) for e in entities][:8] == [
        (0, gi, f"0-{gi}") for gi in range(7, 14)
    ] + [(1, 2, "1-2")]
    instance = entities[7]
    assert instance.labels[4:] == (
        ("modelName", "NVIDIA A100-SXM4-80GB"),
        ("GPU_I_PROFILE", "3g.40gb"),
        ("GPU_I_ID", "2"),
        ("hostname", "node-a"),
    )
    assert dict(instance.labels)["UUID"] == MIXED[1].uuid  # the parent GPU's UUID
    assert len(entities) == 7 + 4 + 2


def test_gpu_instance_profile_drops_the_compute_slices() -> None:
    device = MIXED[1].mig_devices[0]
    assert gpu_instance_profile(device) == "3g.40gb"
    assert gpu_instance_profile(replace(device, profile="1c.3g.40gb")) == "3g.40gb"
