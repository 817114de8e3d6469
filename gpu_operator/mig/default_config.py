"""The default mig-parted config, generated from the MIG catalog.

mig-parted reads named MIG layouts (`version: v1`, `mig-configs: {name: [layout, ...]}`); a node picks one with
the label `nvidia.com/mig.config`. NVIDIA ships a hand-written default with these names, which we derive from
:mod:`gpu_operator.mig.catalog` instead of copying:

* `all-disabled`: MIG off on every GPU; `all-enabled`: MIG on, no instances;
* `all-<profile>` for every profile any model offers (`+` becomes `.` in the name, so `1g.10gb+me` gives
  `all-1g.10gb.me`), filling each GPU with as many instances as fit. When every model offering the profile fits
  the same number, one layout covers `devices: all`; otherwise one layout per count, each limited by a
  `device-filter` to the models with that count;
* `all-balanced`: each model's balanced mix, models with the same mix sharing one filtered layout.

Pass a subset of models (the GPUs found on a node) to get the config for just those GPUs.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable, Mapping, Sequence

import yaml

from gpu_operator.mig.catalog import GPU_MODELS, LEGACY_PROFILES, GpuModel

__all__ = ["Layout", "config_name", "layout", "profile_configs", "balanced_config", "default_config", "to_yaml"]

Layout = dict[str, Any]


def config_name(profile: str) -> str:
    """`all-<profile>`, with `+` replaced by `.` as NVIDIA names them (`1g.24gb+me.all` → `all-1g.24gb.me.all`)."""
    return "all-" + profile.replace("+", ".")


def layout(devices: Mapping[str, int], device_filter: Sequence[str] | None = None) -> Layout:
    """One mig-parted layout entry over all GPUs (optionally only those matching `device_filter`)."""
    entry: Layout = {}
    if device_filter is not None:
        entry["device-filter"] = list(device_filter)
    entry.update({"devices": "all", "mig-enabled": True, "mig-devices": dict(devices)})
    return entry


def _group(models: Iterable[GpuModel], key: Any) -> dict[Any, list[str]]:
    """PCI ids grouped by `key(model)`, in first-seen order, without repeats."""
    groups: dict[Any, list[str]] = {}
    for model in models:
        ids = groups.setdefault(key(model), [])
        if model.pci_id not in ids:
            ids.append(model.pci_id)
    return groups


def _profile_layouts(profile: str, models: Sequence[GpuModel]) -> list[Layout]:
    offering = [m for m in models if profile in m.geometry.profiles]
    by_count = _group(offering, lambda m: m.geometry.profiles[profile])
    if len(by_count) == 1:
        return [layout({profile: next(iter(by_count))})]
    return [layout({profile: count}, ids) for count, ids in by_count.items()]


def profile_configs(models: Sequence[GpuModel] = GPU_MODELS) -> dict[str, list[Layout]]:
    """`all-<profile>` for every profile the models offer, in the order the catalog lists them."""
    profiles = dict.fromkeys(p for m in models for p in m.geometry.profiles)
    return {config_name(p): _profile_layouts(p, models) for p in profiles}


def balanced_config(models: Sequence[GpuModel] = GPU_MODELS) -> list[Layout]:
    """`all-balanced`: one filtered layout per distinct balanced mix."""
    with_mix = [m for m in models if m.geometry.balanced]
    groups = _group(with_mix, lambda m: tuple(m.geometry.balanced.items()))
    return [layout(dict(mix), ids) for mix, ids in groups.items()]


def default_config(
    models: Sequence[GpuModel] = GPU_MODELS, legacy: Mapping[str, int] = LEGACY_PROFILES
) -> dict[str, Any]:
    """The whole config document; `legacy` profiles no model offers are added as `devices: all` layouts."""
    configs: dict[str, list[Layout]] = {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "all-enabled": [{"devices": "all", "mig-enabled": True, "mig-devices": {}}],
    }
    configs.update(profile_configs(models))
    for profile, count in legacy.items():
        configs.setdefault(config_name(profile), [layout({profile: count})])
    balanced = balanced_config(models)
    if balanced:
        configs["all-balanced"] = balanced
    return {"version": "v1", "mig-configs": configs}


def to_yaml(document: Mapping[str, Any]) -> str:
    """A mig-parted config as the YAML text a ConfigMap carries."""
    return yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False)
