"""`python -m tools.docgen [--check]`: write the generated reference pages, or check that they are current.

Without `--check`, each page under docs/reference/ is written from its generator. With `--check`, nothing is
written: every page that differs from what its generator makes is named, with the command that remakes it, and
the exit status is 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from tools.docgen import (
    alerts_reference,
    apply_order,
    architecture,
    cli_reference,
    compatibility,
    components_reference,
    config_reference,
)

__all__ = ["DOCS", "PAGES", "main", "stale_pages"]

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: Page under docs/ → its generator.
PAGES: dict[str, Callable[[], str]] = {
    "reference/config.md": config_reference.page,
    "reference/cli.md": cli_reference.page,
    "reference/alerts.md": alerts_reference.page,
    "reference/components.md": components_reference.page,
    "reference/compatibility.md": compatibility.page,
    "reference/apply-order.md": apply_order.page,
    "reference/apply-order-infiniband.mermaid": apply_order.infiniband_snippet,
    "reference/architecture.md": architecture.page,
}


def stale_pages(docs: Path = DOCS) -> list[str]:
    """The pages whose committed text is not what their generator makes now."""
    stale = []
    for page, generate in PAGES.items():
        path = docs / page
        if not path.is_file() or path.read_text(encoding="utf-8") != generate():
            stale.append(page)
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docgen", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check that the committed pages are current")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_pages()
        for page in stale:
            print(f"docs/{page} is not what its generator makes: run `make docs-reference` and commit it",
                  file=sys.stderr)
        return 1 if stale else 0
    for page, generate in PAGES.items():
        (DOCS / page).parent.mkdir(parents=True, exist_ok=True)
        (DOCS / page).write_text(generate(), encoding="utf-8")
        print(f"wrote docs/{page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
