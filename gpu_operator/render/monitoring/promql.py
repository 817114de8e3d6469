"""Metric names a PromQL expression reads, found by parsing it with a real PromQL parser (`promql-parser`)."""

from __future__ import annotations

from collections.abc import Iterator

import promql_parser

__all__ = ["metric_names"]

_WRAPPERS = (promql_parser.AggregateExpr, promql_parser.ParenExpr, promql_parser.UnaryExpr, promql_parser.SubqueryExpr)


def _walk(node: promql_parser.Expr) -> Iterator[str]:
    if isinstance(node, promql_parser.VectorSelector):
        if node.name:
            yield node.name
    elif isinstance(node, promql_parser.MatrixSelector):
        yield from _walk(node.vector_selector)
    elif isinstance(node, promql_parser.BinaryExpr):
        yield from _walk(node.lhs)
        yield from _walk(node.rhs)
    elif isinstance(node, promql_parser.Call):
        for argument in node.args:
            yield from _walk(argument)
    elif isinstance(node, _WRAPPERS):
        yield from _walk(node.expr)


def metric_names(expr: str) -> frozenset[str]:
    """Every metric `expr` selects; a syntax error is a ValueError naming the expression."""
    try:
        tree = promql_parser.parse(expr)
    except Exception as error:  # the parser raises its own exception types for syntax errors
        raise ValueError(f"invalid PromQL {expr!r}: {error}") from error
    return frozenset(_walk(tree))
