"""Writing rendered objects out: multi-document YAML, one file per object, and a summary table.

This is the only I/O around rendering. YAML is emitted without anchors or aliases (Kubernetes tooling and human
readers expect every object spelled out) and with keys in the order the renderers build them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Sequence

import yaml

from gpu_operator.render.registry import RenderedOperand

__all__ = ["dump_yaml", "dump_all_yaml", "object_filename", "write_directory", "summary_rows", "format_table"]

_OWN_FILE = re.compile(r"^\d{4}-[a-z0-9.-]+\.yaml$")


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)


def dump_all_yaml(objects: Iterable[Any]) -> str:
    return yaml.dump_all(list(objects), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)


def object_filename(index: int, obj: dict[str, Any]) -> str:
    """`0007-daemonset-nvidia-driver-daemonset.yaml`: apply order, kind, name."""
    return f"{index:04d}-{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


def write_directory(objects: Sequence[dict[str, Any]], directory: Path) -> list[Path]:
    """Write one file per object in apply order; files a previous render wrote there are replaced."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.iterdir():
        if stale.is_file() and _OWN_FILE.match(stale.name):
            stale.unlink()
    paths = []
    for index, obj in enumerate(objects, start=1):
        path = directory / object_filename(index, obj)
        path.write_text(dump_yaml(obj))
        paths.append(path)
    return paths


def _images(objects: Iterable[dict[str, Any]]) -> list[str]:
    images: dict[str, None] = {}
    for obj in objects:
        if obj["kind"] != "DaemonSet":
            continue
        pod = obj["spec"]["template"]["spec"]
        for container in pod["containers"]:
            images[container["image"]] = None
    return list(images)


def summary_rows(operands: Sequence[RenderedOperand]) -> list[tuple[str, str, str, str]]:
    """(state, object count, DaemonSets, main images) per operand."""
    rows = []
    for operand in operands:
        daemonsets = [o["metadata"]["name"] for o in operand.objects if o["kind"] == "DaemonSet"]
        rows.append((
            operand.state,
            str(len(operand.objects)),
            ", ".join(daemonsets) or "-",
            ", ".join(_images(operand.objects)) or "-",
        ))
    return rows


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *rows]]
    return "\n".join(lines)
