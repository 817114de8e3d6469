"""Prometheus text exposition format 0.0.4, written the way Go's `expfmt` writes it.

A scrape body is a sequence of metric *families*: a `# HELP` line, a `# TYPE` line and one line per sample,
`name{label="value",...} value`. NVIDIA's exporters are Go programs that render through `expfmt`, so matching
them byte for byte means following its rules:

* HELP text escapes backslash and newline; label values also escape the double quote;
* values are Go's shortest float form (`strconv.FormatFloat(v, 'g', -1, 64)`): `1410`, `71.542`,
  `1.234567e+06` (an exponent from a million up, or below 0.0001), with `+Inf`, `-Inf` and `NaN` spelled so;
* families come sorted by name; families without samples are left out.

Sample order inside a family is the caller's business (see :func:`label_signature` for dcgm-exporter's).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

__all__ = [
    "CONTENT_TYPE",
    "Family",
    "Labels",
    "MetricType",
    "Sample",
    "escape_help",
    "escape_label_value",
    "format_labels",
    "format_value",
    "label_signature",
    "render_families",
]

#: The Content-Type of a text-format scrape.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

MetricType = str
#: Label pairs in the order they are written.
Labels = tuple[tuple[str, str], ...]

#: Below this magnitude an integral value prints as a plain integer (Go's `%g` switches to an exponent at 1e6).
_PLAIN_INTEGER_LIMIT = 1_000_000
#: Go's shortest `%g` uses an exponent when the decimal exponent is below -4 or at least 6.
_SMALLEST_PLAIN_EXPONENT = -4
_LARGEST_PLAIN_EXPONENT = 6
_SPECIAL_VALUES = {math.inf: "+Inf", -math.inf: "-Inf"}


@dataclass(frozen=True, slots=True)
class Sample:
    """One line of a family: its labels (written in this order) and its value."""

    labels: Labels
    value: float

    @property
    def label_text(self) -> str:
        return format_labels(self.labels)


@dataclass(frozen=True, slots=True)
class LabelBlock:
    """Labels formatted ahead of time (`{a="1",...}`) with their sort signature, for series rendered each cycle."""

    text: str
    signature: str

    @classmethod
    def of(cls, labels: Labels) -> LabelBlock:
        return cls(format_labels(labels), label_signature(labels))


@dataclass(frozen=True, slots=True)
class FormattedSample:
    """A sample whose labels are a ready :class:`LabelBlock`."""

    block: LabelBlock
    value: float

    @property
    def label_text(self) -> str:
        return self.block.text


@dataclass(frozen=True, slots=True)
class Family:
    """A metric family: name, HELP text, TYPE (`gauge`, `counter`, `untyped`) and samples."""

    name: str
    help: str
    type: MetricType
    samples: Sequence[Sample | FormattedSample]


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def escape_label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _shortest_digits(value: float) -> tuple[str, int]:
    """(digits, point): `value` = 0.digits × 10**point, with the fewest digits that round-trip."""
    _, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    significant = "".join(map(str, digit_tuple)).lstrip("0")
    digits = significant.rstrip("0")
    return digits, len(digits) + exponent + len(significant) - len(digits)


def _exponent_form(negative: bool, digits: str, point: int) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exponent = point - 1
    return f"{'-' if negative else ''}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def _plain_form(negative: bool, digits: str, point: int) -> str:
    if point <= 0:
        text = "0." + "0" * -point + digits
    elif point >= len(digits):
        text = digits + "0" * (point - len(digits))
    else:
        text = digits[:point] + "." + digits[point:]
    return ("-" if negative else "") + text


def format_value(value: float) -> str:
    """A sample value as Go's expfmt writes it (shortest `%g`)."""
    if math.isnan(value):
        return "NaN"
    special = _SPECIAL_VALUES.get(value)
    if special is not None:
        return special
    if value == int(value) and abs(value) < _PLAIN_INTEGER_LIMIT:
        return str(int(value))
    digits, point = _shortest_digits(abs(float(value)))
    if _SMALLEST_PLAIN_EXPONENT <= point - 1 < _LARGEST_PLAIN_EXPONENT:
        return _plain_form(value < 0, digits, point)
    return _exponent_form(value < 0, digits, point)


def format_labels(labels: Labels) -> str:
    """`{a="1",b="2"}`, or the empty string for no labels."""
    if not labels:
        return ""
    return "{" + ",".join(f'{name}="{escape_label_value(value)}"' for name, value in labels) + "}"


def label_signature(labels: Labels) -> str:
    """dcgm-exporter's sort key for the samples of a family: the labels sorted by name, length-prefixed.

    Each pair becomes `<len(name)>:<name>=<len(value)>:<value>;` (lengths in UTF-8 bytes), so samples sort by
    their first differing label in name order, shorter values first.
    """
    return "".join(
        f"{len(name.encode())}:{name}={len(value.encode())}:{value};" for name, value in sorted(labels)
    )


def _family_text(family: Family) -> str:
    lines = [f"# HELP {family.name} {escape_help(family.help)}", f"# TYPE {family.name} {family.type}"]
    lines.extend(f"{family.name}{s.label_text} {format_value(s.value)}" for s in family.samples)
    return "\n".join(lines) + "\n"


def render_families(families: Iterable[Family]) -> bytes:
    """The scrape body: every family with samples, sorted by name."""
    present = sorted((f for f in families if f.samples), key=lambda f: f.name)
    return "".join(_family_text(f) for f in present).encode()
