"""Where `make e2e-tools` put the programs of the e2e tier, and which of them exist.

`tools/e2e/build.sh --bin-dir` names the bin directory of the current cache key (the versions and go.mod files);
`--check` says whether every tool of that key is built. Pulumi's Kubernetes provider and the Python and Node.js
language hosts cannot be built here (the module proxy refuses their pseudo-versions, see `tools/e2e/README.md`):
they are looked up on PATH and beside the built tools, and the tests that need them say so when they are absent.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.reference import REPO_ROOT

__all__ = ["BUILD_SCRIPT", "E2eTools", "locate_tools"]

BUILD_SCRIPT = REPO_ROOT / "tools" / "e2e" / "build.sh"
_REQUIRED = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


@dataclass(frozen=True)
class E2eTools:
    """The bin directory of the built tools and the KWOK stage files beside it."""

    bin_dir: Path

    @property
    def stages_dir(self) -> Path:
        return self.bin_dir.parent / "kwok-stages"

    def path(self, name: str) -> Path:
        return self.bin_dir / name

    def optional(self, name: str) -> Path | None:
        """A program that may be missing: beside the built tools, else on PATH."""
        here = self.bin_dir / name
        if here.is_file():
            return here
        found = shutil.which(name)
        return Path(found) if found else None


def locate_tools() -> E2eTools:
    """The built tools; raises RuntimeError naming the fix when `make e2e-tools` has not finished."""
    bin_dir = Path(subprocess.run([str(BUILD_SCRIPT), "--bin-dir"], check=True, capture_output=True, text=True).stdout.strip())
    missing = [name for name in _REQUIRED if not (bin_dir / name).is_file()]
    if not (bin_dir.parent / "kwok-stages").is_dir():
        missing.append("KWOK's stage files")
    if missing:
        raise RuntimeError(f"the e2e tools are not built ({', '.join(missing)} missing in {bin_dir}): run `make e2e-tools`")
    return E2eTools(bin_dir)
