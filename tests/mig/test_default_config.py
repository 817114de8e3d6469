"""The generated default mig-parted config against NVIDIA's `config-default.yaml` (mig-parted v0.15.0).

We compare meaning, not text: layouts are compared as (device filter as a set, devices, MIG mode, instances),
in any order, and for every GPU model in our catalog the layouts that apply to it (and that it can create) must
be the same in both files for every config name.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable, Mapping

import pytest
import yaml

from gpu_operator.config.mig_parted import MigPartedConfig
from gpu_operator.mig.catalog import GPU_MODELS, GpuModel, model_by_pci_id
from gpu_operator.mig.default_config import balanced_config, config_name, default_config, layout, to_yaml
from gpu_operator.mig.matching import device_filter_ids, layouts_for
from tests.support.reference import reference_file

#: Where NVIDIA's hand-written file omits a model our catalog says can do the layout: config → model names.
KNOWN_UPSTREAM_GAPS = {"all-1g.35gb": {"H200 NVL"}}

#: The families the default config must cover, by one PCI id each.
REQUIRED_FAMILIES = {
    "A100-40GB": "0x20B010DE",
    "A100-80GB": "0x20B210DE",
    "A30": "0x20B710DE",
    "H100-80GB": "0x233010DE",
    "H100 NVL": "0x232110DE",
    "H200 141GB": "0x233510DE",
    "GH200": "0x234210DE",
    "GH200 144G": "0x234810DE",
    "H20": "0x232910DE",
    "B200": "0x290110DE",
    "GB200": "0x294110DE",
    "B300": "0x318210DE",
    "GB300": "0x31C210DE",
    "RTX PRO 6000": "0x2BB510DE",
}

Normalised = tuple[Any, ...]


@pytest.fixture(scope="module")
def upstream() -> dict[str, list[dict[str, Any]]]:
    document = yaml.safe_load(reference_file("mig-parted/config-default.yaml").read_text())
    return document["mig-configs"]


@pytest.fixture(scope="module")
def ours() -> dict[str, list[dict[str, Any]]]:
    return default_config()["mig-configs"]


def _normalise(entry: Mapping[str, Any]) -> Normalised:
    devices = entry.get("mig-devices")
    return (
        device_filter_ids(entry),
        entry["devices"],
        entry["mig-enabled"],
        None if devices is None else tuple(sorted(devices.items())),
    )


def _layouts(entries: Iterable[Mapping[str, Any]]) -> set[Normalised]:
    return {_normalise(entry) for entry in entries}


def _effective(entries: Iterable[Mapping[str, Any]], model: GpuModel) -> set[Normalised]:
    """The layouts of a config that reach this model and only use profiles it offers, without their filters."""
    usable = (
        e for e in layouts_for(entries, model.pci_id)
        if all(p in model.geometry.profiles for p in e.get("mig-devices") or {})
    )
    return {_normalise(e)[1:] for e in usable}


def test_same_config_names_as_upstream(upstream, ours) -> None:
    assert set(ours) == set(upstream)
    assert len(ours) == 81


def test_every_layout_matches_upstream(upstream, ours) -> None:
    differing = sorted(name for name in upstream if _layouts(upstream[name]) != _layouts(ours[name]))
    assert differing == sorted(KNOWN_UPSTREAM_GAPS)


def test_known_gap_only_adds_the_missing_models(upstream, ours) -> None:
    for name, models in KNOWN_UPSTREAM_GAPS.items():
        added = {model_by_pci_id(i).name for e in ours[name] for i in device_filter_ids(e) or ()}
        upstream_ids = {i for e in upstream[name] for i in device_filter_ids(e) or ()}
        assert added - {model_by_pci_id(i).name for i in upstream_ids} == models


@pytest.mark.parametrize("model", GPU_MODELS, ids=lambda m: m.name)
def test_each_model_gets_upstream_layouts_for_every_config(model, upstream, ours) -> None:
    for name in upstream:
        if model.name in KNOWN_UPSTREAM_GAPS.get(name, ()):
            continue
        assert _effective(ours[name], model) == _effective(upstream[name], model), name


@pytest.mark.parametrize("family,pci_id", sorted(REQUIRED_FAMILIES.items()))
def test_required_families_are_covered(family, pci_id, upstream) -> None:
    model = model_by_pci_id(pci_id)
    assert model is not None, family
    balanced = _effective(upstream["all-balanced"], model)
    assert balanced == {("all", True, tuple(sorted(model.geometry.balanced.items())))}
    for profile, count in model.geometry.profiles.items():
        if model.name in KNOWN_UPSTREAM_GAPS.get(config_name(profile), ()):
            continue
        assert _effective(upstream[config_name(profile)], model) == {("all", True, ((profile, count),))}


def test_filtered_profile_gets_one_layout_per_count(ours) -> None:
    one_g_10 = {_normalise(e)[3]: device_filter_ids(e) for e in ours["all-1g.10gb"]}
    assert one_g_10[(("1g.10gb", 4),)] == {"0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"}
    assert "0x233010DE" in one_g_10[(("1g.10gb", 7),)]
    assert ours["all-1g.12gb"] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.12gb": 7}}]


def test_disabled_enabled_and_legacy_configs(ours) -> None:
    assert ours["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    assert ours["all-enabled"] == [{"devices": "all", "mig-enabled": True, "mig-devices": {}}]
    assert ours["all-7g.189gb"] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"7g.189gb": 1}}]
    assert list(ours)[:2] == ["all-disabled", "all-enabled"]


def test_yaml_text_is_a_valid_mig_parted_config() -> None:
    text = to_yaml(default_config())
    parsed = yaml.safe_load(text)
    assert parsed == default_config()
    config = MigPartedConfig.model_validate(parsed)
    assert config.mig_configs["all-1g.24gb.me.all"][0].mig_devices == {"1g.24gb+me.all": 1}
    assert "'0x20B010DE'" in text  # quoted, or YAML 1.1 readers would see a hex number


def test_config_for_one_model_needs_no_filters_but_balanced() -> None:
    h100 = model_by_pci_id("0x233010DE")
    configs = default_config([h100], legacy={})["mig-configs"]
    assert set(configs) == {"all-disabled", "all-enabled", "all-balanced"} | {
        config_name(p) for p in h100.geometry.profiles
    }
    assert configs["all-1g.10gb"] == [layout({"1g.10gb": 7})]
    assert configs["all-balanced"] == [layout({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, ["0x233010DE"])]


def test_balanced_groups_models_sharing_a_mix() -> None:
    groups = {device_filter_ids(e): e["mig-devices"] for e in balanced_config()}
    assert groups[frozenset({"0x233510DE", "0x233B10DE"})] == {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}
    assert len(groups) == 12


@pytest.mark.parametrize(
    "profile,name",
    [("1g.10gb", "all-1g.10gb"), ("1g.10gb+me", "all-1g.10gb.me"), ("1g.24gb+me.all", "all-1g.24gb.me.all"),
     ("1g.24gb-me", "all-1g.24gb-me"), ("2g.48gb+gfx", "all-2g.48gb.gfx")],
)
def test_config_names(profile, name) -> None:
    assert config_name(profile) == name
