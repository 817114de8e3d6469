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


def _problem(error: Any) -> str:
    """One validation error as `path: message`; a rule on a whole layout names its field in the message."""
    where = ".".join(str(p) for p in error["loc"]) or "(top)"
    message = str(error["msg"]).removeprefix("Value error, ")
    field, sep, rest = message.partition(": ")
    if sep and field == "mig-devices":
        return f"{where}.{field}: {rest}"
    return f"{where}: {message}"


def parse_config(text: str, source: str) -> MigPartedConfig:
    document = read_document(text, source)
    problems: list[str] = []
    config: MigPartedConfig | None = None
    try:
        config = MigPartedConfig.model_validate(document)
    except ValidationError as error:
        problems = [_problem(e) for e in error.errors()]
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
