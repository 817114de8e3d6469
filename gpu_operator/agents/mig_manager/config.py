"""Loading a mig-parted config file and resolving a named config to a layout per GPU.

A bad file (not YAML, an unknown `version`, a malformed profile, `mig-enabled: true` without a `mig-devices`
field or `mig-enabled: false` with MIG devices, both of which mig-parted's v1 spec refuses) is a `MigConfigError`
naming the field; a config name the file lacks, or a profile a GPU does not offer, is found when the config is
selected for the node's GPUs. When several layouts of a config match a GPU, the last one wins, as mig-parted
applies them in order; :func:`matches` gives every (layout, GPU) pair, for the checks mig-parted makes per pair.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gpu_operator.mig.matching import normal_pci_id
from gpu_operator.mig.parted import MigDeviceLayout, MigPartedConfig

__all__ = [
    "GpuLayout",
    "MigConfigError",
    "MigDeviceLayout",
    "MigPartedConfig",
    "load_config",
    "matches",
    "parse_config",
    "read_document",
    "select",
]


class MigConfigError(ValueError):
    """A mig-parted config file or config name that cannot be applied."""


@dataclass(frozen=True, slots=True)
class GpuLayout:
    enabled: bool
    devices: dict[str, int]


def read_document(text: str, source: str) -> dict[str, Any]:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise MigConfigError(f"{source}: not valid YAML: {error}") from error
    if not isinstance(document, dict):
        raise MigConfigError(f"{source}: expected a mapping with 'version: v1' and 'mig-configs'")
    return document


def _mode_and_devices(document: dict[str, Any]) -> list[str]:
    """mig-parted's v1 rule between `mig-enabled` and `mig-devices`: an enabled layout names its devices (`{}` for
    MIG on with no devices); a disabled one names none."""
    configs = document.get("mig-configs")
    problems: list[str] = []
    for name, layouts in (configs.items() if isinstance(configs, dict) else ()):
        for position, layout in enumerate(layouts if isinstance(layouts, list) else ()):
            if not isinstance(layout, dict):
                continue
            where = f"mig-configs.{name}.{position}.mig-devices"
            if layout.get("mig-enabled") is True and "mig-devices" not in layout:
                problems.append(f"{where}: required when mig-enabled is true "
                                "(write 'mig-devices: {}' for MIG on with no devices)")
            if layout.get("mig-enabled") is False and layout.get("mig-devices"):
                problems.append(f"{where}: must be empty when mig-enabled is false "
                                "(remove the devices, or set mig-enabled: true)")
    return problems


def parse_config(text: str, source: str) -> MigPartedConfig:
    document = read_document(text, source)
    problems: list[str] = []
    config: MigPartedConfig | None = None
    try:
        config = MigPartedConfig.model_validate(document)
    except ValidationError as error:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in error.errors()]
    problems += _mode_and_devices(document)
    if problems or config is None:
        raise MigConfigError(f"{source}: {'; '.join(problems)} (see the mig-parted v1 config format)")
    return config


def load_config(path: str | Path) -> MigPartedConfig:
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise MigConfigError(f"cannot read MIG config file {path}: {error.strerror}") from None
    return parse_config(text, str(path))


def matches(
    config: MigPartedConfig, name: str, gpus: list[tuple[int, str]]
) -> Iterator[tuple[MigDeviceLayout, int]]:
    """Every (layout, GPU index) of config `name` that applies, in the file's order, as mig-parted walks them."""
    layouts = config.mig_configs.get(name)
    if layouts is None:
        raise MigConfigError(f"no MIG config named {name!r} (the file defines {', '.join(config.mig_configs)})")
    for layout in layouts:
        ids = layout.device_filter
        wanted = None if ids is None else {normal_pci_id(i) for i in ((ids,) if isinstance(ids, str) else ids)}
        for index, pci_id in gpus:
            if wanted is not None and normal_pci_id(pci_id) not in wanted:
                continue
            if layout.devices != "all" and index not in layout.devices:
                continue
            yield layout, index


def select(config: MigPartedConfig, name: str, gpus: list[tuple[int, str]]) -> dict[int, GpuLayout]:
    """The layout of config `name` for each (index, PCI id) it covers."""
    chosen: dict[int, GpuLayout] = {}
    for layout, index in matches(config, name, gpus):
        devices = {k: v for k, v in layout.mig_devices.items() if v} if layout.mig_enabled else {}
        chosen[index] = GpuLayout(layout.mig_enabled, devices)
    return chosen
