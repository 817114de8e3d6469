"""The troubleshooting table names checks `diag` makes: every check in its first column is one the diag module
reports (a renamed check fails here instead of leaving the page pointing at nothing)."""

from __future__ import annotations

import re
from pathlib import Path

import gpu_operator.diag

from tests.docs.runnable import DOCS

DIAG = Path(gpu_operator.diag.__file__).parent


def test_every_check_the_page_lists_is_reported_by_diag() -> None:
    page = (DOCS / "tasks" / "troubleshooting.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    listed = {check for row in rows for check in re.findall(r"`([a-z0-9-]+)`", row.split("|")[1])}
    source = "".join(path.read_text(encoding="utf-8") for path in DIAG.glob("*.py"))
    assert len(listed) > 30
    assert sorted(check for check in listed if f'"{check}"' not in source) == []
