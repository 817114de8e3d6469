"""Which layouts of a named mig-parted config apply to a GPU.

A config is a list of layouts; a layout without `device-filter` applies to every GPU, one with a filter (a PCI
id string or a list of them, `0x<device><vendor>`) only to GPUs whose id it names. Ids compare case-insensitively
and are returned in the catalog's spelling (`0x233010DE`).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable, Mapping

__all__ = ["normal_pci_id", "device_filter_ids", "layouts_for"]


def normal_pci_id(pci_id: str) -> str:
    """`0x` followed by upper-case hex digits, whatever the input's case."""
    return "0x" + pci_id[2:].upper() if pci_id[:2].lower() == "0x" else pci_id.upper()


def device_filter_ids(entry: Mapping[str, Any]) -> frozenset[str] | None:
    """The ids a layout's `device-filter` names (normalised), or None when it has no filter."""
    value = entry.get("device-filter")
    if value is None:
        return None
    ids = [value] if isinstance(value, str) else value
    return frozenset(normal_pci_id(str(i)) for i in ids)


def layouts_for(entries: Iterable[Mapping[str, Any]], pci_id: str) -> list[Mapping[str, Any]]:
    """The layouts of one config that apply to a GPU with this PCI id, in config order."""
    wanted = normal_pci_id(pci_id)
    matching = []
    for entry in entries:
        ids = device_filter_ids(entry)
        if ids is None or wanted in ids:
            matching.append(entry)
    return matching
