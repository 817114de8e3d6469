"""Writing rendered objects out: multi-document YAML, one file per object, and a summary table.

This is the only I/O around rendering. YAML is emitted without anchors or aliases (Kubernetes tooling and human
readers expect every object spelled out) and with keys in the order the renderers build them.

An output directory is written all or nothing: every file is rendered in memory, the directory is checked (not a
file, nothing in the way, writable), the files are written to a staging directory inside it and only then moved
into place, replacing the files a previous render left there. A failure before the move leaves the directory as
it was (and removes it when the render created it).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Mapping, Sequence

import yaml

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.errors import ConfigError, Problem
from gpu_operator.render.aks.documents import AZURE_FILE_PREFIXES
from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import operand_implementation
from gpu_operator.render.registry import RenderedOperand

__all__ = [
    "SUMMARY_HEADER",
    "dump_yaml",
    "dump_all_yaml",
    "object_filename",
    "manifest_files",
    "write_files",
    "write_directory",
    "summary_rows",
    "format_table",
]

#: Files a render writes (paths relative to the output directory); a previous render's are replaced.
_OWN_FILE = re.compile(
    r"^(\d{4}-[a-z0-9.-]+\.yaml"
    rf"|azure/({'|'.join(re.escape(prefix) for prefix in AZURE_FILE_PREFIXES)})[^/]+\.json"
    r"|helm/[a-z0-9.-]+-values\.yaml)\Z"
)
_STAGING_PREFIX = ".gpu-operator-render-"


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


def manifest_files(objects: Sequence[dict[str, Any]]) -> dict[str, str]:
    """File name → YAML text, one file per object in apply order."""
    return {object_filename(index, obj): dump_yaml(obj) for index, obj in enumerate(objects, start=1)}


def write_directory(objects: Sequence[dict[str, Any]], directory: Path) -> list[Path]:
    """Write one file per object in apply order; files a previous render wrote there are replaced."""
    return write_files(manifest_files(objects), directory)


def _fail(directory: Path, message: str) -> ConfigError:
    return ConfigError([Problem("", message)], str(directory))


def _check_directory(directory: Path, names: Iterable[str]) -> list[Path]:
    """Refuse a directory that cannot take the files; return the missing directories it takes to create it."""
    try:
        return _probe_directory(directory, names)
    except OSError as error:  # a name too long, a path through something that is not a directory, ...
        raise _fail(directory, f"cannot be used: {error.strerror or error}; name another directory") from None


def _probe_directory(directory: Path, names: Iterable[str]) -> list[Path]:
    missing: list[Path] = []
    existing = directory
    while not existing.exists():
        if existing.is_symlink():
            raise _fail(directory, f"{existing} is a symbolic link that leads nowhere (broken, or a loop); "
                                   "remove it or name another directory")
        missing.append(existing)
        existing = existing.parent
    if not existing.is_dir():
        if existing == directory:
            raise _fail(directory, "is a file, not a directory; name a directory for the output (it is created "
                                   "when missing), or leave -o out to print the manifests")
        raise _fail(directory, f"{existing} is a file, so no directory can be created under it; "
                               "name a directory for the output")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise _fail(directory, f"{existing} is not writable by this user; name another directory, or make it "
                               "writable")
    for name in names:
        parts = Path(name).parts
        for depth in range(1, len(parts)):
            folder = directory.joinpath(*parts[:depth])
            if folder.exists() and not folder.is_dir():
                raise _fail(directory, f"{folder} is a file where the output needs a directory; move it away")
        if (directory / name).is_dir():
            raise _fail(directory, f"{directory / name} is a directory where the output writes a file; move it away")
    return list(reversed(missing))


def _remove_created(created: Sequence[Path]) -> None:
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:
            break


def _stale_files(directory: Path) -> list[Path]:
    candidates = [*directory.glob("*"), *directory.glob("azure/*"), *directory.glob("helm/*")]
    return [
        path for path in candidates
        if path.is_file() and _OWN_FILE.match(path.relative_to(directory).as_posix())
    ]


def write_files(files: Mapping[str, str], directory: Path) -> list[Path]:
    """Write `files` (relative path → text) under `directory`, all or nothing; ConfigError names what is wrong.

    The files of a previous render there (numbered manifests, `azure/` documents, `helm/` values) are replaced;
    other files are kept.
    """
    created = _check_directory(directory, files)
    staging: Path | None = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=directory))
        for name, text in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(text, encoding="utf-8")
    except OSError as error:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        _remove_created(created)
        where = error.filename or directory
        raise _fail(directory, f"cannot write {where}: {error.strerror or error}; nothing was written: "
                               "name a writable directory") from None
    try:
        for stale in _stale_files(directory):
            stale.unlink()
        paths = []
        for name in files:
            target = directory / name
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / name, target)
            paths.append(target)
    except OSError as error:
        raise _fail(directory, f"writing was interrupted at {error.filename}: {error.strerror or error}; "
                               "the directory now holds a partial render: render again") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
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


#: Columns of :func:`summary_rows`.
SUMMARY_HEADER = ("STATE", "OBJECTS", "DAEMONSETS", "RUNS", "IMAGES")


def summary_rows(operands: Sequence[RenderedOperand], config: GpuStackConfig) -> list[tuple[str, str, str, str, str]]:
    """(state, object count, DaemonSets, whose program runs and why, main images) per operand.

    The RUNS column comes from the same decision the render made (`nvidia: no agents image configured`,
    `agents: agents.image`, `nvidia: override (agents.overrides.gfd)`, ...).
    """
    ctx = RenderContext(config)
    rows = []
    for operand in operands:
        daemonsets = [o["metadata"]["name"] for o in operand.objects if o["kind"] == "DaemonSet"]
        rows.append((
            operand.state,
            str(len(operand.objects)),
            ", ".join(daemonsets) or "-",
            str(operand_implementation(ctx, operand.key)) if daemonsets else "-",
            ", ".join(_images(operand.objects)) or "-",
        ))
    return rows


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *rows]]
    return "\n".join(lines)
