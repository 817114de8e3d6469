"""The catalog's package data: NVIDIA's XIDs, the XID 144-150 decode rules and the DCGM health failures.

`catalog.yaml` beside this module is generated from NVIDIA's files by `tools/generate_fault_catalog.py` (a test
fails when it drifts from what the generator makes of them); this module reads it once into typed, immutable
records. Each record keeps NVIDIA's own words (the resolution bucket, NVSentinel's recommended action) beside the
fault class it resolves to.

An interrupt info mask is NVIDIA's 32-character bit pattern, most significant bit first, `-` for a bit the rule
does not read (`------000000----------0111000110`): the V1 form for drivers before R575, V2 from R575.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

import yaml

from gpu_operator.faults.classes import FAULT_CLASSES

__all__ = [
    "Catalog",
    "DecodeRule",
    "HealthEntry",
    "IntrInfoMask",
    "Promotion",
    "XidEntry",
    "catalog",
    "load_catalog",
]

_DATA = "catalog.yaml"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class IntrInfoMask:
    """One of NVIDIA's interrupt info bit patterns, as a mask of the bits it reads and their values."""

    pattern: str
    mask: int
    value: int

    @classmethod
    def parse(cls, pattern: str) -> IntrInfoMask:
        if len(pattern) != 32 or set(pattern) - set("01-"):
            raise ValueError(f"interrupt info mask {pattern!r} is not 32 characters of 0, 1 and -")
        fixed = pattern.replace("0", "1").replace("-", "0")
        return cls(pattern, int(fixed, 2), int(pattern.replace("-", "0"), 2))

    def matches(self, intr_info: int) -> bool:
        return intr_info & self.mask == self.value


@dataclass(frozen=True, slots=True)
class XidEntry:
    """One XID of NVIDIA's catalog: its names, its resolution buckets, and what we make of them."""

    code: int
    mnemonic: str
    description: str
    immediate: str | None
    investigatory: str | None
    fault_class: str
    action: str


@dataclass(frozen=True, slots=True)
class Promotion:
    """A promotable row's "action 2": the interrupt info that makes a non-fatal error fatal, and its bucket."""

    v1: IntrInfoMask
    v2: IntrInfoMask
    immediate: str
    fault_class: str
    action: str


@dataclass(frozen=True, slots=True)
class DecodeRule:
    """One row of NVIDIA's XID 144-150 decode: which interrupt info and error status it covers, and its bucket.

    `error_status` empty means any status (the sheet leaves the cell empty).
    """

    xid: int
    subcode: str
    v1: IntrInfoMask
    v2: IntrInfoMask
    error_status: frozenset[int]
    immediate: str
    fault_class: str
    action: str
    promoted: Promotion | None
    investigatory: str | None
    severity: str | None

    def covers(self, error_status: int) -> bool:
        return not self.error_status or error_status in self.error_status


@dataclass(frozen=True, slots=True)
class HealthEntry:
    """A DCGM health failure (`DCGM_FR_*`), NVIDIA's recommended action for it, and its class."""

    failure: str
    action: str
    fault_class: str


@dataclass(frozen=True, slots=True)
class Catalog:
    xids: Mapping[int, XidEntry]
    nvlink5_decode: Mapping[int, tuple[DecodeRule, ...]]
    dcgm_health: Mapping[str, HealthEntry]


def _class_name(name: Any, where: str) -> str:
    if name not in FAULT_CLASSES:
        raise ValueError(f"{where}: class {name!r} is not a fault class ({', '.join(FAULT_CLASSES)})")
    return str(name)


def _xid(row: Mapping[str, Any]) -> XidEntry:
    return XidEntry(int(row["code"]), row["mnemonic"], row["description"], row["immediate"], row["investigatory"],
                    _class_name(row["class"], f"XID {row['code']}"), row["action"])


def _rule(row: Mapping[str, Any]) -> DecodeRule:
    where = f"XID {row['xid']} {row['subcode']}"
    promoted = row["promoted"]
    return DecodeRule(
        xid=int(row["xid"]),
        subcode=row["subcode"],
        v1=IntrInfoMask.parse(row["v1"]),
        v2=IntrInfoMask.parse(row["v2"]),
        error_status=frozenset(int(status, 16) for status in row["error_status"]),
        immediate=row["immediate"],
        fault_class=_class_name(row["class"], where),
        action=row["action"],
        promoted=None if promoted is None else Promotion(
            IntrInfoMask.parse(promoted["v1"]), IntrInfoMask.parse(promoted["v2"]), promoted["immediate"],
            _class_name(promoted["class"], where), promoted["action"]),
        investigatory=row["investigatory"],
        severity=row["severity"],
    )


def load_catalog(text: str) -> Catalog:
    """The catalog from the generated file's text; a ValueError naming the row that does not fit."""
    document = yaml.load(text, Loader=_Loader)
    try:
        xids = {entry.code: entry for entry in map(_xid, document["xids"])}
        decode: dict[int, list[DecodeRule]] = {}
        for rule in map(_rule, document["nvlink5_decode"]):
            decode.setdefault(rule.xid, []).append(rule)
        health = {
            row["failure"]: HealthEntry(row["failure"], row["action"], _class_name(row["class"], row["failure"]))
            for row in document["dcgm_health"]
        }
    except (KeyError, TypeError) as error:
        raise ValueError(f"the fault catalog lacks {error}: regenerate it with tools/generate_fault_catalog.py") \
            from None
    return Catalog(MappingProxyType(xids), MappingProxyType({k: tuple(v) for k, v in decode.items()}),
                   MappingProxyType(health))


@cache
def catalog() -> Catalog:
    """The catalog shipped with the package (read once)."""
    return load_catalog(resources.files(__package__).joinpath(_DATA).read_text(encoding="utf-8"))
