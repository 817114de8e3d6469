"""Running `gpu-operator` in a scratch directory: the files a case creates, and a snapshot to prove nothing else was."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["CONSOLE_SCRIPT", "create_files", "snapshot"]

#: The installed console script, beside the interpreter that runs the suite.
CONSOLE_SCRIPT = Path(sys.executable).parent / "gpu-operator"


def create_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    """`name → content`; a name ending in '/' is a directory, one ending in '@' a symbolic link to `content`."""
    for name, content in files.items():
        path = root / name
        if name.endswith("@"):
            (root / name[:-1]).symlink_to(str(content))
            continue
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and directory (None) under `root`, by relative path."""
    tree: dict[str, bytes | None] = {}
    for folder, folders, names in os.walk(root):
        for name in folders:
            tree[os.path.relpath(os.path.join(folder, name), root)] = None
        for name in names:
            path = Path(folder, name)
            tree[os.path.relpath(path, root)] = path.read_bytes() if not path.is_symlink() else b"->"
    return tree
