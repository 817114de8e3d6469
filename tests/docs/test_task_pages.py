"""Every task page's runnable commands run, so a page cannot rot: each block exits 0 with the project's CLI on
the repository's example configs, offline. Every task page has such a block."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.runnable import DOCS, Block, blocks

REPO = DOCS.parent
TASKS = sorted((DOCS / "tasks").glob("*.md"))
#: What a scratch directory holds of the repository, as a checkout would (tests/ for the recorded diag snapshot).
LINKED = ("examples", "stacks", "tests")


def _scratch(tmp_path: Path) -> Path:
    for name in LINKED:
        (tmp_path / name).symlink_to(REPO / name)
    return tmp_path


def _run(block: Block, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", block.text], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("page", TASKS, ids=[page.stem for page in TASKS])
def test_every_task_page_has_commands_that_run(page: Path) -> None:
    assert blocks(page), f"{page.relative_to(DOCS)} has no ```sh title=\"runs in CI\"``` block"


def _all_pages() -> list[Path]:
    return sorted(page for page in DOCS.rglob("*.md") if blocks(page))


@pytest.mark.parametrize("page", _all_pages(), ids=lambda page: str(page.relative_to(DOCS)))
def test_the_runnable_blocks_of_a_page_run(page: Path, tmp_path: Path) -> None:
    cwd = _scratch(tmp_path)
    missing = []
    for block in blocks(page):
        if block.needs is not None and shutil.which(block.needs) is None:
            missing.append(f"{block.page}:{block.line} ({block.needs})")
            continue  # only this block waits for its program: every other block of the page still runs
        done = _run(block, cwd)
        assert done.returncode == 0, (f"{block.page}:{block.line} exited {done.returncode}\n--- block\n{block.text}"
                                      f"--- stdout\n{done.stdout[-3000:]}--- stderr\n{done.stderr[-3000:]}")
    if missing:
        pytest.skip(f"not run, a program missing: {', '.join(missing)}; run tools/install-test-tools.sh")
