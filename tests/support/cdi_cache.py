"""What a container runtime's CDI cache makes of spec directories: the device names that resolve, and the errors.

Modelled from container-device-interface v1.1.0 (the library containerd and CRI-O resolve CDI names with):

* pkg/cdi/spec-dirs.go `scanSpecDirs`: the directories in order, each one's priority its index (the defaults are
  `/etc/cdi`, then `/var/run/cdi`); in a directory, `filepath.Walk`'s lexical order; subdirectories skipped; only
  files ending in `.json` or `.yaml` read;
* pkg/cdi/cache.go `refresh`: a device name (`vendor/class=name`) defined again by a spec of higher priority
  replaces the earlier definition, by one of lower priority is ignored, and by one of the same priority is a
  "conflicting device": an error for both files, and the name is removed from the cache, so it resolves nowhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

__all__ = ["CdiCache", "load_cache", "nvidia_spec_file"]


@dataclass
class CdiCache:
    """Each resolvable device name's spec file, and the errors by file."""

    devices: dict[str, Path] = field(default_factory=dict)
    errors: dict[Path, list[str]] = field(default_factory=dict)


def _spec_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return [p for p in sorted(directory.iterdir()) if p.is_file() and p.suffix in (".json", ".yaml")]


def load_cache(spec_dirs: Sequence[Path]) -> CdiCache:
    """The cache after a refresh over `spec_dirs` (lowest priority first)."""
    cache = CdiCache()
    origin: dict[str, tuple[int, Path]] = {}
    conflicts: set[str] = set()
    for priority, directory in enumerate(spec_dirs):
        for path in _spec_files(directory):
            spec = yaml.safe_load(path.read_text())  # JSON is YAML; the library parses both alike
            kind = spec["kind"]
            for device in spec["devices"]:
                name = f"{kind}={device['name']}"
                if name in origin:
                    old_priority, old_path = origin[name]
                    if priority < old_priority:
                        continue
                    if priority == old_priority:
                        error = f"conflicting device {name!r} (specs {str(path)!r}, {str(old_path)!r})"
                        cache.errors.setdefault(path, []).append(error)
                        cache.errors.setdefault(old_path, []).append(error)
                        conflicts.add(name)
                        continue
                origin[name] = (priority, path)
    cache.devices = {name: path for name, (_, path) in origin.items() if name not in conflicts}
    return cache


def nvidia_spec_file(spec_dir: Path, kind: str) -> Path:
    """Where NVIDIA's device plugin saves the spec of `kind` (k8s-device-plugin v0.20.0 internal/cdi/cdi.go
    `CreateSpecFile`: `cdiRoot/<GenerateNameForSpec>.json`; container-device-interface pkg/cdi/spec.go
    GenerateNameForSpec: `<vendor>-<class>`)."""
    vendor, _, cdi_class = kind.partition("/")
    return spec_dir / f"{vendor}-{cdi_class}.json"
