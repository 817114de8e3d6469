"""The commands a docs page marks as runnable: its fenced `sh` blocks titled "runs in CI".

A block is written as a user types it in the repository root (```` ```sh title="runs in CI" ````); one that needs
a program beside the package says so in its title (```` title="runs in CI: needs promtool" ````). The blocks of a
page run in order, in one scratch directory holding the repository's examples and stacks, so a later block reads
what an earlier one wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Block", "DOCS", "blocks"]

DOCS = Path(__file__).resolve().parents[2] / "docs"
_BLOCK = re.compile(r'^```sh title="runs in CI(?:: needs ([a-z-]+))?"\n(.*?)^```$', re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One runnable block: its page, line, the program it needs beside the package (if any), and its text."""

    page: str
    line: int
    needs: str | None
    text: str


def blocks(page: Path) -> list[Block]:
    """The runnable blocks of one page, in order."""
    text = page.read_text(encoding="utf-8")
    return [Block(str(page.relative_to(DOCS)), text.count("\n", 0, match.start()) + 1, match.group(1),
                  match.group(2)) for match in _BLOCK.finditer(text)]
