"""Kubernetes quantities (`500m`, `1Gi`, `2`) written the way the API server stores them.

A `resource.Quantity` is a fixed-point number with a suffix: binary-SI (`Ki` … `Ei`, powers of 1024),
decimal-SI (`n`, `u`, `m`, none, `k`, `M`, `G`, `T`, `P`, `E`, powers of 1000) or a decimal exponent
(`e3`, `E-6`). The API server parses every quantity it is sent and stores the text the parsed value prints as,
so `1024Mi` comes back `1Gi` and `0.5` comes back `500m`. Server-side apply and `pulumi refresh` then compare our
text with the stored text as plain strings: a quantity we render in another spelling is a difference, and a
conflict with the field manager (Helm) that wrote the stored spelling. :func:`canonical_quantity` gives the
stored text, so we can render it.

How the server prints a quantity (apimachinery `pkg/api/resource`, `ParseQuantity` then `String`):

* The value keeps the *kind* of suffix it was written with. Binary-SI stays binary-SI with the largest exact
  suffix (`1024Mi` → `1Gi`, `1000Ki` stays `1000Ki`, `1536Mi` stays); decimal-SI stays decimal-SI, the exponent
  lowered to a multiple of three with no trailing zeros left in the digits where a larger suffix takes them
  (`1000M` → `1G`, `1000m` → `1`, `0.5` → `500m`, `1.5G` → `1500M`); a decimal exponent stays one, in the same
  steps of three (`1e4` → `10e3`, `1.2e3` → `1200`, an exponent of 0 being dropped).
* A binary-SI value under 1024 in magnitude, or with a fraction, prints as decimal-SI (`0.5Ki` → `512`,
  `1.1Ki` → `1126400m`).
* Precision stops at 1n: finer values round away from zero (`0.1n` → `1n`). Binary-SI values are capped at
  2^63-1 (`9Ei` → `9223372036854775807`). Zero is `0`, whatever its sign or suffix.
* Text that the parser's 64-bit fast path finds already in its shortest form is kept byte for byte, even where a
  reprint would differ: decimal text of up to 18 digits, at least 1n, with an exponent that is a multiple of
  three and digits that neither start with a zero nor end in `000` (`100m`, `1e3`, `1.500`, `+1`, `1.`, `05` are
  kept), and binary-SI text with a small whole number that is no multiple of 8 (`5Ki`, `+5Ki`, `5.Ki`).
* Surrounding white space is dropped (the server trims the JSON string); a number sent as a JSON integer reads
  as its decimal digits (`2`, `1000` → `1k`).
* In a resource list (a container's `requests` and `limits`, a pod's `overhead`) the server's defaulting first
  rounds the value up to 1m, away from zero (`100u` → `1m`): `resource_list=True`.

Spellings the server accepts but would store as another number are refused here instead of imitated: a
decimal-SI value whose digits would need a suffix above `E` (the server prints `1000E` as `1`), and an exponent
that overflows its 32-bit arithmetic; so is text of more than 1000 digits. Any other text the server's parser
refuses is refused too, with a :class:`QuantityError`.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Literal, NamedTuple

__all__ = ["QuantityError", "canonical_quantity", "is_canonical", "quantity_value"]

Form = Literal["BinarySI", "DecimalSI", "DecimalExponent"]

_DIGITS = frozenset("0123456789")
#: Letters the server's scanner takes into a suffix.
_SUFFIX_LETTERS = "eEinumkKMGTP"
#: The most digits we read (the server has no limit; a quantity this long is a mistake, not a size).
_MOST_DIGITS = 1000
#: Decimal-SI suffix → power of ten, and back.
_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SI_SUFFIX = {power: suffix for suffix, power in _DECIMAL_SI.items()}
#: Binary-SI suffix → power of two, and (by power of 1024) back.
_BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_SI_SUFFIX = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")
#: Digits the server's fast path reads into a 64-bit integer (more go through its arbitrary-precision path).
_MAX_DIGITS = 18
#: The server's finest precision (1n) and its binary-SI cap (the largest 64-bit integer).
_NANO = -9
_MILLI = -3
_BINARY_CAP = (1 << 63) - 1
_INT32 = range(-(1 << 31), 1 << 31)
#: White space the server trims from a quantity (Go's unicode.IsSpace).
_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
         "\u2028\u2029\u202f\u205f\u3000"


class QuantityError(ValueError):
    """Text that is no Kubernetes quantity, or one the API server would store as a different number."""

    def __init__(self, quantity: object, reason: str) -> None:
        super().__init__(f"{quantity!r} is not a Kubernetes quantity: {reason} (examples: 500m, 1Gi, 2)")
        self.quantity = quantity


class _Split(NamedTuple):
    """The parts the server's scanner finds: sign, digits before and after the point, suffix."""

    negative: bool
    number: str
    """The signed number as written, without the suffix (`-1.50`); `0` where the text holds only zeros."""
    whole: str
    """Digits before the point, leading zeros dropped (`0` when none are left)."""
    fraction: str
    """Digits after the point, as written."""
    suffix: str


class _Reading(NamedTuple):
    """A parsed quantity: coefficient × 10^exponent, its form, and the text the server keeps, if any."""

    coefficient: int
    exponent: int
    form: Form
    kept: str | None


def _split(text: str) -> _Split:
    """Split like the server's scanner, which is lenient (`.`, `1.`, a lone sign) where its grammar is not."""
    end = len(text)
    pos = 0
    negative = False
    if text[:1] in ("+", "-"):
        negative = text[0] == "-"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos == end:
        return _Split(negative, "0", "0", "", "")
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    whole = text[start:pos] or "0"
    fraction = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
    number, suffix = text[:pos], text[pos:]
    letters = len(suffix) - len(suffix.lstrip(_SUFFIX_LETTERS))
    rest = suffix[letters:]
    if rest[:1] in ("+", "-"):
        rest = rest[1:]
    if any(char not in _DIGITS for char in rest):
        raise QuantityError(text, "expected a number, then a suffix (Ki, Mi, Gi, m, k, M, G, e6, ...)")
    if len(whole) + len(fraction) + len(rest) > _MOST_DIGITS:
        raise QuantityError(text, f"more than {_MOST_DIGITS} digits")
    return _Split(negative, number, whole, fraction, suffix)


def _suffix(text: str, suffix: str) -> tuple[int, int, Form]:
    """(base, exponent, form) of a suffix: `Mi` → (2, 20, BinarySI), `k` → (10, 3, DecimalSI), `e-3`."""
    if suffix in _DECIMAL_SI:
        return 10, _DECIMAL_SI[suffix], "DecimalSI"
    if suffix in _BINARY_SI:
        return 2, _BINARY_SI[suffix], "BinarySI"
    match = _EXPONENT.fullmatch(suffix)
    if match is None:
        raise QuantityError(text, f"unknown suffix {suffix!r}")
    exponent = int(match.group(1))
    if exponent not in _INT32:
        raise QuantityError(text, "the exponent overflows the API server's 32-bit exponent")
    return 10, exponent, "DecimalExponent"


def _read(text: str) -> _Reading:
    """The value the server parses `text` into, and whether it keeps `text` as its printed form."""
    if not text:
        raise QuantityError(text, "it is empty")
    split = _split(text)
    base, exponent, form = _suffix(text, split.suffix)
    sign = -1 if split.negative else 1
    digits = split.whole + split.fraction
    if base == 10:
        fast = len(digits) <= _MAX_DIGITS
        scale = exponent - len(split.fraction)
        if scale not in _INT32:
            raise QuantityError(text, "the exponent overflows the API server's 32-bit exponent")
        if fast and scale >= _NANO:
            kept = scale % 3 == 0 and not digits.endswith("000") and digits[0] != "0"
            return _Reading(sign * int(digits), scale, form, text if kept else None)
        coefficient, power = sign * int(digits), scale
    else:
        # the fast path takes whole binary numbers small enough for 64 bits; it keeps a number no multiple of 8
        fast = not split.fraction and len(split.whole) + exponent * 3 // 10 + 1 <= 15
        if fast:
            whole = int(split.whole)
            return _Reading(sign * (whole << exponent), 0, form, text if whole % 8 else None)
        coefficient, power = sign * (int(digits) << exponent), -len(split.fraction)
    if not any(char in _DIGITS for char in split.number):
        raise QuantityError(text, "it has no digits")
    coefficient, power = _round_up(coefficient, power)
    if base == 2 and abs(coefficient) > _BINARY_CAP * 10 ** max(-power, 0):
        coefficient, power = (_BINARY_CAP if coefficient > 0 else -_BINARY_CAP), 0
    return _Reading(coefficient, power, form, None)


def _round_up(coefficient: int, power: int, finest: int = _NANO) -> tuple[int, int]:
    """The value rounded away from zero to a multiple of 10^finest (1n when parsing, 1m in a resource list)."""
    if coefficient == 0 or power >= finest:
        return coefficient, power
    shift = finest - power
    magnitude = abs(coefficient)
    if shift > len(str(magnitude)):
        rounded = 1
    else:
        rounded, remainder = divmod(magnitude, 10**shift)
        rounded += remainder != 0
    return (rounded if coefficient > 0 else -rounded), finest


def _strip_tens(coefficient: int, power: int) -> tuple[int, int]:
    """The same value with no trailing zeros in the coefficient."""
    digits = str(abs(coefficient))
    zeros = len(digits) - len(digits.rstrip("0"))
    return coefficient // 10**zeros, power + zeros


def _decimal_text(text: str, coefficient: int, power: int, form: Form) -> str:
    """Digits and suffix of a decimal-SI or decimal-exponent value: the largest exponent, a multiple of three."""
    coefficient, power = _strip_tens(coefficient, power)
    if power not in _INT32:
        raise QuantityError(text, "the exponent overflows the API server's 32-bit exponent")
    step = power % 3
    coefficient, power = coefficient * 10**step, power - step
    if power not in _INT32:
        raise QuantityError(text, "the exponent overflows the API server's 32-bit exponent")
    if form == "DecimalExponent":
        return f"{coefficient}e{power}" if power else str(coefficient)
    if power not in _DECIMAL_SI_SUFFIX:
        raise QuantityError(text, "the value needs a suffix above E; the API server would store another number")
    return f"{coefficient}{_DECIMAL_SI_SUFFIX[power]}"


def _binary_text(text: str, coefficient: int, power: int) -> str:
    """Digits and suffix of a binary-SI value; decimal-SI under 1024 or with a fraction, as the server prints it."""
    number, fraction = divmod(abs(coefficient), 10**-power)  # a binary-SI reading never has a positive power
    if fraction or number < 1024:
        return _decimal_text(text, coefficient, power, "DecimalSI")
    steps = 0
    while number >= 1024 and number % 1024 == 0 and steps < len(_BINARY_SI_SUFFIX) - 1:
        number //= 1024
        steps += 1
    return f"{'-' if coefficient < 0 else ''}{number}{_BINARY_SI_SUFFIX[steps]}"


def _stored(quantity: str | int, resource_list: bool) -> tuple[str, _Reading]:
    """The text the server's parser starts from, and its reading (rounded up to 1m in a resource list)."""
    if isinstance(quantity, bool) or not isinstance(quantity, (str, int)):
        raise QuantityError(quantity, f"a quantity is a string or an integer, not {type(quantity).__name__}")
    text = str(quantity).strip(_SPACE)
    reading = _read(text)
    if resource_list and reading.exponent < _MILLI:
        reading = _Reading(*_round_up(reading.coefficient, reading.exponent, _MILLI), reading.form, None)
    return text, reading


def _print(text: str, reading: _Reading) -> str:
    if reading.kept is not None:
        return reading.kept
    if reading.coefficient == 0:
        return "0"
    if reading.form == "BinarySI":
        return _binary_text(text, reading.coefficient, reading.exponent)
    return _decimal_text(text, reading.coefficient, reading.exponent, reading.form)


def canonical_quantity(quantity: str | int, *, resource_list: bool = False) -> str:
    """The text the API server stores for `quantity` (`1024Mi` → `1Gi`, `0.5` → `500m`, `2` → `2`).

    `resource_list`: the quantity is a value of a resource list (a container's `requests`/`limits`, a pod's
    `overhead`), which the server's defaulting rounds up to 1m first (`100u` → `1m`). Raises
    :class:`QuantityError` for text that is no quantity, and for the spellings the server would store as another
    number (see the module's docstring)."""
    return _print(*_stored(quantity, resource_list))


def quantity_value(quantity: str | int, *, resource_list: bool = False) -> Decimal:
    """The number the API server stores for `quantity`, exactly (`1Gi` → 1073741824, `100m` → 0.100).

    That is the number as written, except where the server rounds up (to 1n, or 1m in a resource list, away
    from zero) or caps (binary-SI at 2^63-1). Raises :class:`QuantityError` where :func:`canonical_quantity`
    does."""
    text, reading = _stored(quantity, resource_list)
    _print(text, reading)  # refuses what the server would store as another number
    digits = tuple(int(digit) for digit in str(abs(reading.coefficient)))
    return Decimal((1 if reading.coefficient < 0 else 0, digits, reading.exponent))


def is_canonical(quantity: object, *, resource_list: bool = False) -> bool:
    """Whether `quantity` is a string the API server stores unchanged (an integer never is: it comes back a
    string)."""
    if not isinstance(quantity, str):
        return False
    try:
        return canonical_quantity(quantity, resource_list=resource_list) == quantity
    except QuantityError:
        return False
