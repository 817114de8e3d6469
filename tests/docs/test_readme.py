"""The README is a first visit: short, its example runs as written, and every page it points to exists (the rest of
what it once held is on the docs site)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.docs.runnable import DOCS

REPO = DOCS.parent
README = REPO / "README.md"
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)")
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _fenced(language: str) -> list[str]:
    return [body for lang, body in _FENCE.findall(_text()) if lang == language]


def test_the_readme_is_short() -> None:
    assert len(_text().splitlines()) < 200


def test_every_page_the_readme_links_exists() -> None:
    links = [target for target, _ in _LINK.findall(_text()) if "://" not in target]
    assert len(links) > 20
    assert [target for target in links if not (REPO / target).exists()] == []


def test_the_readme_example_renders_and_checks(tmp_path: Path) -> None:
    """The example document, saved as the file its comment names, goes through the commands that follow it."""
    example = next(body for body in _fenced("yaml") if body.startswith("# gpu.yaml"))
    (tmp_path / "gpu.yaml").write_text(example, encoding="utf-8")
    commands = next(body for body in _fenced("sh") if "-f gpu.yaml" in body)
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Standard_ND96isr_H100_v5" in done.stdout and "all-1g.10gb" in done.stdout
