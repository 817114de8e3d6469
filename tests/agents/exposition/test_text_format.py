"""Text exposition 0.0.4 as Go's expfmt writes it, and parsed back by prometheus_client."""

from __future__ import annotations

import math

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpu_operator.agents.exposition import (
    Family,
    FormattedSample,
    LabelBlock,
    Sample,
    format_value,
    label_signature,
    render_families,
)
from gpu_operator.agents.exposition.text_format import (
    escape_help,
    escape_label_value,
    format_labels,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (-0.0, "0"),
        (1, "1"),
        (-1, "-1"),
        (1410, "1410"),
        (999999, "999999"),
        (1_000_000, "1e+06"),
        (1_234_567, "1.234567e+06"),
        (123_456_789, "1.23456789e+08"),
        (2.5e6, "2.5e+06"),
        (71.542, "71.542"),
        (999999.5, "999999.5"),
        (0.5, "0.5"),
        (0.123457, "0.123457"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-0.00012345, "-0.00012345"),
        (1e21, "1e+21"),
        (1795254312.0, "1.795254312e+09"),
        (5e-324, "5e-324"),
        (math.inf, "+Inf"),
        (-math.inf, "-Inf"),
        (math.nan, "NaN"),
    ],
)
def test_values_are_go_shortest_g(value: float, text: str) -> None:
    assert format_value(value) == text


def test_escaping() -> None:
    assert escape_help('a\\b\nc"d') == 'a\\\\b\\nc"d'
    assert escape_label_value('a\\b\nc"d') == 'a\\\\b\\nc\\"d'
    assert format_labels((("gpu", "0"), ("modelName", 'x "y"'))) == '{gpu="0",modelName="x \\"y\\""}'
    assert format_labels(()) == ""


def test_signature_sorts_by_first_differing_label_shorter_values_first() -> None:
    seven = (("gpu", "0"), ("GPU_I_ID", "7"))
    thirteen = (("gpu", "0"), ("GPU_I_ID", "13"))
    assert label_signature(seven) == "8:GPU_I_ID=1:7;3:gpu=1:0;"
    assert sorted([thirteen, seven], key=label_signature) == [seven, thirteen]


def test_families_sorted_by_name_and_empty_ones_left_out() -> None:
    body = render_families(
        [
            Family("zeta", "last", "counter", [Sample((("a", "1"),), 3)]),
            Family("empty", "nothing", "gauge", []),
            Family("alpha", "first\nline", "gauge", [Sample((), 1.5), Sample((("a", 'q"'),), 2)]),
        ]
    ).decode()
    assert body == (
        "# HELP alpha first\\nline\n# TYPE alpha gauge\nalpha 1.5\nalpha{a=\"q\\\"\"} 2\n"
        "# HELP zeta last\n# TYPE zeta counter\nzeta{a=\"1\"} 3\n"
    )
    families = {f.name: f for f in text_string_to_metric_families(body)}
    assert set(families) == {"alpha", "zeta"}
    assert families["alpha"].documentation == "first\nline"
    assert [s.labels for s in families["alpha"].samples] == [{}, {"a": 'q"'}]
    assert [s.value for s in families["alpha"].samples] == [1.5, 2.0]
    assert families["zeta"].type == "counter"


def test_preformatted_samples_render_like_plain_ones() -> None:
    labels = (("gpu", "1"), ("UUID", 'GPU-"x"'))
    block = LabelBlock.of(labels)
    assert block == LabelBlock('{gpu="1",UUID="GPU-\\"x\\""}', label_signature(labels))
    plain = render_families([Family("m", "h", "gauge", [Sample(labels, 7)])])
    ready = render_families([Family("m", "h", "gauge", [FormattedSample(block, 7)])])
    assert plain == ready == b'# HELP m h\n# TYPE m gauge\nm{gpu="1",UUID="GPU-\\"x\\""} 7\n'
