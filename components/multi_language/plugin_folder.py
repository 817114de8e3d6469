"""A plugin folder for `pulumi package add`, bound to the Python that has this package installed.

A Pulumi component provider written in Python is a folder with `PulumiPlugin.yaml` (the runtime, and the
virtualenv whose Python runs it) and `__main__.py`. The folder shipped inside the package finds its virtualenv by a
relative path, which only holds for a regular install into a virtualenv; this writes a folder anywhere whose
`virtualenv` names an interpreter's environment (by default the running one's `sys.prefix`):

    python -m gpu_operator.components.multi_language.plugin_folder ./gpu-operator-plugin
    pulumi package add ./gpu-operator-plugin

The folder holds only those two files: the code stays in the installed package.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

__all__ = ["SHIPPED", "main", "plugin_settings", "write_plugin_folder"]

#: The plugin folder inside the package.
SHIPPED = Path(__file__).resolve().parent
_FILES = ("__main__.py",)


def plugin_settings(virtualenv: Path) -> dict[str, Any]:
    """The shipped `PulumiPlugin.yaml` with its virtualenv replaced by `virtualenv` (made absolute)."""
    settings = yaml.safe_load((SHIPPED / "PulumiPlugin.yaml").read_text())
    settings["runtime"]["options"]["virtualenv"] = str(virtualenv.resolve())
    return settings


def write_plugin_folder(directory: Path, virtualenv: Path | None = None) -> Path:
    """Write the plugin folder at `directory` (created if needed) for `virtualenv` (default: `sys.prefix`)."""
    directory.mkdir(parents=True, exist_ok=True)
    settings = plugin_settings(virtualenv if virtualenv is not None else Path(sys.prefix))
    header = "# The gpu-operator component provider, for `pulumi package add` (written by plugin_folder).\n"
    (directory / "PulumiPlugin.yaml").write_text(header + yaml.safe_dump(settings, sort_keys=False))
    for name in _FILES:
        (directory / name).write_text((SHIPPED / name).read_text())
    return directory


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpu_operator.components.multi_language.plugin_folder",
        description="Write a gpu-operator plugin folder for `pulumi package add`.")
    parser.add_argument("directory", type=Path, help="the folder to write (created if needed)")
    parser.add_argument("--virtualenv", type=Path, default=None,
                        help="the virtualenv whose Python runs the plugin (default: this interpreter's, sys.prefix)")
    options = parser.parse_args(argv)
    folder = write_plugin_folder(options.directory, options.virtualenv)
    print(f"wrote {folder}; now run: pulumi package add {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
