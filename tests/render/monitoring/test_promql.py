"""Metric names read from PromQL by parsing it."""

from __future__ import annotations

import pytest

from gpu_operator.render.monitoring.promql import metric_names


def test_every_selector_is_found_through_aggregations_calls_offsets_and_set_operators() -> None:
    expr = 'count by (h) (a offset 30m) > count(b) or (max_over_time(c{x="1"}[5m]) unless -d) + rate(e[1m:])'
    assert metric_names(expr) == {"a", "b", "c", "d", "e"}


def test_a_label_inside_a_selector_is_not_a_metric() -> None:
    assert metric_names('up{job="DCGM_FI_DEV_GPU_TEMP"} == 0') == {"up"}


def test_a_syntax_error_names_the_expression() -> None:
    with pytest.raises(ValueError, match=r"invalid PromQL 'sum\('"):
        metric_names("sum(")
