"""What the docs quote of the command line's output is what it prints: the summary's RUNS reasons (the trial found
`nvidia: no agent shipped for this operand` in the README where the summary said another thing)."""

from __future__ import annotations

import re

from gpu_operator.config import parse_config
from gpu_operator.manifests import summary_rows
from gpu_operator.render import render_operands
from tests.docs.runnable import DOCS

_QUOTED_REASON = re.compile(r"`((?:nvidia|agents): [^`]+)`")
_IMAGE = {"repository": "registry.example.com/gpu-operator-agents", "tag": "0.1.0"}
#: Configs that between them take every reason the summary gives.
_CONFIGS = [
    {},
    {"agents": {"image": _IMAGE}},
    {"agents": {"image": _IMAGE, "implementation": "nvidia"}},
    {"agents": {"image": _IMAGE, "overrides": {"dcgmExporter": "nvidia"}}},
]


def _reasons() -> set[str]:
    reasons = set()
    for document in _CONFIGS:
        config = parse_config(document)
        reasons |= {row[3] for row in summary_rows(render_operands(config), config)}
    return reasons


def test_the_summary_reasons_the_docs_quote_are_the_summarys() -> None:
    quoted = set(_QUOTED_REASON.findall((DOCS / "concepts" / "operands.md").read_text(encoding="utf-8")))
    assert quoted, "the operands page quotes the summary's reasons"
    assert quoted <= _reasons(), f"quoted but never printed: {sorted(quoted - _reasons())}"
