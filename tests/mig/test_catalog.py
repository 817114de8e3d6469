"""The MIG catalog's data is self-consistent: ids, profile names, balanced mixes."""

from __future__ import annotations

import re

import pytest

from gpu_operator.config.mig_parted import MIG_PROFILE_PATTERN
from gpu_operator.mig.catalog import GEOMETRIES, GPU_MODELS, LEGACY_PROFILES, model_by_pci_id

_PCI_ID = re.compile(r"^0x[0-9A-F]{4}10DE$")


def _slices(profile: str) -> int:
    """Compute slices of a profile: the `<n>g` part."""
    return int(profile.split("g.", 1)[0].split(".")[-1])


def test_pci_ids_are_unique_and_in_mig_parted_form() -> None:
    ids = [model.pci_id for model in GPU_MODELS]
    assert len(ids) == len(set(ids))
    assert all(_PCI_ID.match(pci_id) for pci_id in ids), ids
    assert GPU_MODELS[0].pci_id == "0x20B010DE"


def test_every_geometry_is_used_by_a_model() -> None:
    used = {id(model.geometry) for model in GPU_MODELS}
    assert used == {id(geometry) for geometry in GEOMETRIES}


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: g.name)
def test_profiles_are_go_nvlib_names_with_sensible_counts(geometry) -> None:
    for profile, count in geometry.profiles.items():
        assert MIG_PROFILE_PATTERN.match(profile), profile
        assert 1 <= count <= 7
        assert _slices(profile) * count <= 8, (profile, count)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: g.name)
def test_balanced_mix_uses_offered_profiles_and_fits_one_gpu(geometry) -> None:
    assert geometry.balanced, geometry.name
    for profile, count in geometry.balanced.items():
        assert profile in geometry.profiles
        assert count <= geometry.profiles[profile]
    assert sum(_slices(p) * n for p, n in geometry.balanced.items()) <= 7


def test_legacy_profiles_belong_to_no_current_model() -> None:
    offered = {p for model in GPU_MODELS for p in model.geometry.profiles}
    assert set(LEGACY_PROFILES) == {"1g.24gb+me", "3g.95gb", "4g.95gb", "7g.189gb"}
    assert not offered & set(LEGACY_PROFILES)


def test_lookup_by_pci_id_ignores_case() -> None:
    model = model_by_pci_id("0x233510de")
    assert model is not None and model.name == "H200-141GB"
    assert model.geometry.profiles["1g.18gb"] == 7
    assert model_by_pci_id("0x12345678") is None


def test_geometries_are_read_only() -> None:
    with pytest.raises(TypeError):
        GPU_MODELS[0].geometry.profiles["1g.5gb"] = 1  # type: ignore[index]
