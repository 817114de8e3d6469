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
from gpu_operator.agents.nvml import MigAttributes, MigDevice, open_nvml

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


def _instance(profile: str | None, gi_slices: int, ci_slices: int, memory_mib: int) -> MigDevice:
    attributes = MigAttributes(14 * ci_slices, 1, 0, 0, 0, 0, gi_slices, ci_slices, memory_mib)
    return MigDevice(0, None, 0, None, 7, 0, profile, attributes)


def test_gpu_i_profile_is_named_as_the_shipped_dcgm_names_it() -> None:
    # DCGM names a GPU instance <slices>g.<ceil(memory MiB / 1024)>gb: the A100 80GB's whole-GPU instance has
    # 80384 MiB, which go-nvlib (and GFD, the device plugin) call 7g.80gb and dcgm-exporter labels 7g.79gb.
    assert gpu_instance_profile(_instance("7g.80gb", 7, 7, 80384)) == "7g.79gb"
    assert gpu_instance_profile(_instance("1g.10gb", 1, 1, 9728)) == "1g.10gb"
    assert gpu_instance_profile(_instance("3g.40gb", 3, 3, 40192)) == "3g.40gb"
    # H100 80GB 7g: 81152 MiB -> 79.25 -> 80
    assert gpu_instance_profile(_instance("7g.80gb", 7, 7, 81152)) == "7g.80gb"
    # the compute instance's share never enters the GPU instance's name; engine suffixes stay
    assert gpu_instance_profile(_instance("1c.2g.20gb", 2, 1, 19968)) == "2g.20gb"
    assert gpu_instance_profile(_instance("1g.10gb+me", 1, 1, 9728)) == "1g.10gb+me"


def test_gpu_i_profile_without_attributes_falls_back_to_the_profile() -> None:
    device = MigDevice(0, None, 0, None, 7, 0, "1c.2g.20gb", None)
    assert gpu_instance_profile(device) == "2g.20gb"
