"""The declared nvidia-ml-py floor provides every pynvml name our code uses.

pynvml resolves C functions lazily, but its constants and ctypes structures are module attributes: a name a
release lacks is an AttributeError at import (a table built from it) or at first use. The names our source uses
are collected from the source itself; the releases that lack some of them were found by downloading each from
PyPI and importing its `pynvml.py` (recorded in `data/pynvml_names_by_release.json`, so this runs offline).
"""

from __future__ import annotations

import json
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pynvml

import gpu_operator

PACKAGE = Path(gpu_operator.__file__).parent
REPO = PACKAGE.parent
RECORD = json.loads((Path(__file__).parent / "data" / "pynvml_names_by_release.json").read_text())
NAME = re.compile(r"\bpynvml\.([A-Za-z_][A-Za-z0-9_]*)")
FLOOR = re.compile(r"^nvidia-ml-py>=([0-9.]+)")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _used_names() -> set[str]:
    names: set[str] = set()
    for source in PACKAGE.rglob("*.py"):
        names.update(NAME.findall(source.read_text()))
    return names


def _declared_floors() -> dict[str, tuple[int, ...]]:
    requirements = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    agents = (REPO / "requirements-agents.txt").read_text().splitlines()
    floors = {}
    for where, lines in (("pyproject.toml", requirements), ("requirements-agents.txt", agents)):
        for line in lines:
            match = FLOOR.match(line.strip())
            if match:
                floors[where] = _version(match.group(1))
    return floors


def test_every_pynvml_name_the_code_uses_exists_in_the_installed_release() -> None:
    used = _used_names()
    assert len(used) > 50, "the source scan found too few pynvml names to be the real list"
    missing = sorted(name for name in used if not hasattr(pynvml, name))
    assert not missing


def test_the_declared_floor_is_a_release_that_has_every_name() -> None:
    floors = _declared_floors()
    assert set(floors) == {"pyproject.toml", "requirements-agents.txt"}
    assert len(set(floors.values())) == 1, f"the two floors differ: {floors}"
    floor = next(iter(floors.values()))
    used = _used_names()
    for release, missing in RECORD["missing"].items():
        lacks = sorted(used & set(missing))
        if _version(release) >= floor:
            assert not lacks, f"floor {floor} admits {release}, which lacks {lacks}"


def test_releases_below_the_floor_do_lack_a_name_we_use() -> None:
    # The floor is no higher than it must be: the newest recorded release below it lacks a name we use.
    floor = next(iter(_declared_floors().values()))
    below = [release for release in RECORD["missing"] if _version(release) < floor]
    newest = max(below, key=_version)
    assert _used_names() & set(RECORD["missing"][newest])


def test_the_installed_release_is_at_or_above_the_floor() -> None:
    floor = next(iter(_declared_floors().values()))
    assert _version(metadata.version("nvidia-ml-py")) >= floor
