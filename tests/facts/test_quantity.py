"""Quantities as the API server stores them: the examples of apimachinery's own tests, the text its parser keeps,
resource lists rounded up to 1m, the spellings we refuse, and properties over generated quantities.

The upstream tables are from k8s.io/apimachinery v0.36.3, `pkg/api/resource/quantity_test.go`; each table names
its test function. The texts in `PARSED` and the other tables are what that version prints
(`ParseQuantity(in).String()`, and after `RoundUp(-3)`, the resource-list defaulting of
k8s.io/kubernetes `pkg/apis/core/v1/defaults.go`, `SetDefaults_ResourceList`).
"""

from __future__ import annotations

from decimal import Context, Decimal, localcontext

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gpu_operator.facts.quantity import QuantityError, canonical_quantity, is_canonical, quantity_value

#: TestQuantityParseEmit: written → stored.
PARSE_EMIT = {
    "1Ki": "1Ki",
    "1Mi": "1Mi",
    "1Gi": "1Gi",
    "1024Mi": "1Gi",
    "1000M": "1G",
    ".001Ki": "1024m",
    ".000001Ki": "1024u",
    ".000000001Ki": "1024n",
    ".000000000001Ki": "2n",
}

#: TestQuantityString: (stored, another spelling of it, "" for none). The stored text is kept as it is.
STRINGS = [
    ("1Gi", "1024Mi"), ("300Mi", "307200Ki"), ("6Ki", ""), ("1001Gi", "1025024Mi"), ("1Ti", "1024Gi"),
    ("5", "5000m"), ("500m", "0.5"), ("1G", "1000M"), ("1G", "0.001T"), ("1m", "1000u"), ("80m", ""),
    ("1080m", "1.08"), ("1080m", "1080000000n"), ("300M", ""), ("1T", ""), ("1234567M", ""), ("1234567m", ""),
    ("3k", ""), ("1025", ""), ("0", "00"), ("1e9", ".001e12"), ("1e-3", "0.001e0"), ("1e-9", "1000e-12"),
    ("80e-3", ""), ("300e6", ""), ("1e12", ""), ("1e3", ""), ("3e3", ""), ("1n", ""), ("80n", ""),
    ("1080n", ""), ("1u", ""), ("80u", ""), ("1080u", ""),
]

#: TestQuantityParse: written → (stored, the number the test expects, as a decimal).
PARSED = {
    "0": ("0", "0"), "0n": ("0", "0"), "0u": ("0", "0"), "0m": ("0", "0"), "0Ki": ("0", "0"), "0k": ("0", "0"),
    "0Mi": ("0", "0"), "0M": ("0", "0"), "0Gi": ("0", "0"), "0G": ("0", "0"), "0Ti": ("0", "0"),
    "0T": ("0", "0"),
    "1": ("1", "1"),
    "1Ki": ("1Ki", "1024"), "8Ki": ("8Ki", "8192"), "7Mi": ("7Mi", "7340032"), "6Gi": ("6Gi", "6442450944"),
    "5Ti": ("5Ti", "5497558138880"), "4Pi": ("4Pi", "4503599627370496"), "3Ei": ("3Ei", "3458764513820540928"),
    "10Ti": ("10Ti", "10995116277760"), "100Ti": ("100Ti", "109951162777600"),
    "5n": ("5n", "5e-9"), "4u": ("4u", "4e-6"), "3m": ("3m", "3e-3"), "9": ("9", "9"), "8k": ("8k", "8e3"),
    "50k": ("50k", "5e4"), "7M": ("7M", "7e6"), "6G": ("6G", "6e9"), "5T": ("5T", "5e12"),
    "40T": ("40T", "4e13"), "300T": ("300T", "3e14"), "2P": ("2P", "2e15"), "1E": ("1E", "1e18"),
    "1E-3": ("1E-3", "1e-3"), "1e3": ("1e3", "1e3"), "1E6": ("1E6", "1e6"), "1e9": ("1e9", "1e9"),
    "1E12": ("1E12", "1e12"), "1e15": ("1e15", "1e15"), "1E18": ("1E18", "1e18"),
    "1e14": ("100e12", "1e14"), "1e13": ("10e12", "1e13"), "100.035k": ("100.035k", "100035"),
    "0.001": ("1m", "1e-3"), "0.0005k": ("500m", "5e-1"), "0.005": ("5m", "5e-3"), "0.05": ("50m", "5e-2"),
    "0.5": ("500m", "5e-1"), "0.00050k": ("500m", "5e-1"), "0.00500": ("5m", "5e-3"),
    "0.05000": ("50m", "5e-2"), "0.50000": ("500m", "5e-1"), "0.5e0": ("500e-3", "5e-1"),
    "0.5e-1": ("50e-3", "5e-2"), "0.5e-2": ("5e-3", "5e-3"), "10.035M": ("10.035M", "10035e3"),
    "1.2e3": ("1200", "12e2"), "1.3E+6": ("1300e3", "13e5"), "1.40e9": ("1400e6", "14e8"),
    "1.53E12": ("1530e9", "153e10"), "1.6e15": ("1600e12", "16e14"), "1.7E18": ("1700e15", "17e17"),
    "9.01": ("9010m", "901e-2"), "8.1k": ("8100", "81e2"), "7.123456M": ("7.123456M", "7123456"),
    "6.987654321G": ("6.987654321G", "6987654321"), "5.444T": ("5.444T", "5444e9"),
    "40.1T": ("40100G", "401e11"), "300.2T": ("300200G", "3002e11"), "2.5P": ("2500T", "25e14"),
    "1.01E": ("1010P", "101e16"),
    # things that saturate or round
    "3.001n": ("4n", "4e-9"), "1.1E-9": ("2e-9", "2e-9"), "0.0000000001": ("1n", "1e-9"),
    "0.0000000005": ("1n", "1e-9"), "0.00000000050": ("1n", "1e-9"), "0.5e-9": ("1e-9", "1e-9"),
    "0.9n": ("1n", "1e-9"), "0.00000012345": ("124n", "124e-9"), "0.00000012354": ("124n", "124e-9"),
    "9Ei": ("9223372036854775807", "9223372036854775807"),
    "9223372036854775807Ki": ("9223372036854775807", "9223372036854775807"),
    "12E": ("12E", "12e18"),
    # fractional binary-SI
    "100.035Ki": ("102435840m", "10243584e-2"), "0.5Mi": ("512Ki", "524288"),
    "0.05Gi": ("53687091200m", "536870912e-1"), "0.025Ti": ("27487790694400m", "274877906944e-1"),
    # "things written by trolls"
    "0.000000000001Ki": ("2n", "2e-9"), ".001": ("1m", "1e-3"), ".0001k": ("100m", "1e-1"),
    "1.": ("1.", "1"), "1.G": ("1.G", "1e9"),
}

#: TestQuantityParse's invalid texts (its " 1" and "1 " are refused by ParseQuantity, but the server reads JSON,
#: which trims them: TestJSONWhitespace, below), and more.
INVALID = ["1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-",
           "", " ", "1e", "1Ki3", "1K", "1 Gi", "0x10", "1_000", "١", ".Ei", ".e-10"]

#: TestJSONWhitespace: the JSON value the server reads → stored (a JSON number reads as its digits).
JSON_WHITESPACE: list[tuple[str | int, str]] = [
    (" 1", "1"), ("1 ", "1"), (1, "1"), (10, "10"), (-1, "-1"), (" -1", "-1"),
]

#: The parser keeps text it finds in its shortest form byte for byte (a sign, leading zeros, a trailing point).
KEPT = ["+1", "05", "1.", "5.Ki", "+5Ki", "1E3", "1e+3", "1e03", "1.500", "007m", "100m", "-1Ki", "1025Ki"]

#: Written → stored in a resource list (requests, limits, overhead): rounded up to 1m, away from zero.
RESOURCE_LIST = {
    "100u": "1m", "1n": "1m", "1.5m": "2m", "-100u": "-1m", "1000u": "1m", "1.000001": "1001m",
    "1.500": "1.500", "0.5": "500m", "1e-4": "1e-3", "0.0001Ki": "103m", "1024Mi": "1Gi", "100m": "100m",
    "1000m": "1", "1.5Gi": "1536Mi", "0.5Ki": "512",
}

#: Accepted by the server but stored as another number (or wrapped in its 32-bit exponent): refused.
REFUSED = ["1000E", "1000000000000000000000", "1000000P", "1e2147483648", "1e-2147483649"]


@pytest.mark.parametrize(("written", "stored"), PARSE_EMIT.items())
def test_parse_emit(written: str, stored: str) -> None:
    assert canonical_quantity(written) == stored
    assert canonical_quantity(f"-{written}") == f"-{stored}"


@pytest.mark.parametrize(("stored", "alternate"), STRINGS)
def test_string_and_its_alternate_spelling(stored: str, alternate: str) -> None:
    assert canonical_quantity(stored) == stored
    assert is_canonical(stored)
    if stored != "0":
        assert canonical_quantity(f"-{stored}") == f"-{stored}"
    if alternate:
        assert canonical_quantity(alternate) == stored
        assert not is_canonical(alternate)


@pytest.mark.parametrize(("written", "expected"), PARSED.items())
def test_parse(written: str, expected: tuple[str, str]) -> None:
    stored, number = expected
    assert canonical_quantity(written) == stored
    assert quantity_value(written) == Decimal(number)
    assert quantity_value(f"-{written}") == -Decimal(number)
    assert quantity_value(f"+{written}") == Decimal(number)


@pytest.mark.parametrize("written", INVALID)
def test_invalid(written: str) -> None:
    with pytest.raises(QuantityError, match="is not a Kubernetes quantity"):
        canonical_quantity(written)
    assert not is_canonical(written)


@pytest.mark.parametrize(("sent", "stored"), JSON_WHITESPACE)
def test_json_whitespace_and_numbers(sent: str | int, stored: str) -> None:
    assert canonical_quantity(sent) == stored


@pytest.mark.parametrize("written", KEPT)
def test_text_the_parser_keeps(written: str) -> None:
    assert canonical_quantity(written) == written


@pytest.mark.parametrize(("written", "stored"), RESOURCE_LIST.items())
def test_resource_lists_round_up_to_a_milli(written: str, stored: str) -> None:
    assert canonical_quantity(written, resource_list=True) == stored
    assert is_canonical(stored, resource_list=True)


@pytest.mark.parametrize("written", REFUSED)
def test_what_the_server_would_store_as_another_number_is_refused(written: str) -> None:
    with pytest.raises(QuantityError):
        canonical_quantity(written)


@pytest.mark.parametrize("value", [1.5, True, None, b"1"])
def test_only_strings_and_integers(value: object) -> None:
    with pytest.raises(QuantityError, match="a string or an integer"):
        canonical_quantity(value)  # type: ignore[arg-type]
    assert not is_canonical(value)


def test_an_integer_is_never_what_the_server_stores() -> None:
    assert canonical_quantity(1000) == "1k"
    assert not is_canonical(2)


def test_memory_in_mebibytes_reads_the_same_in_every_spelling() -> None:
    assert {quantity_value(q) / 2**20 for q in ("1Gi", "1024Mi", "1048576Ki", "1073741824")} == {1024}


# properties over generated quantities

_SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_POWERS = {"": (10, 0), "n": (10, -9), "u": (10, -6), "m": (10, -3), "k": (10, 3), "M": (10, 6), "G": (10, 9),
           "T": (10, 12), "P": (10, 15), "E": (10, 18), "Ki": (2, 10), "Mi": (2, 20), "Gi": (2, 30),
           "Ti": (2, 40), "Pi": (2, 50), "Ei": (2, 60)}


@st.composite
def quantities(draw: st.DrawFn) -> tuple[str, Decimal]:
    """A quantity's text and the number it is written for."""
    sign = draw(st.sampled_from(["", "-", "+"]))
    whole = draw(st.text("0123456789", min_size=1, max_size=22))
    fraction = draw(st.one_of(st.none(), st.text("0123456789", max_size=12)))
    exponent = draw(st.integers(-30, 30))
    suffix = draw(st.one_of(st.sampled_from(_SUFFIXES), st.just(f"e{exponent}"), st.just(f"E{exponent:+d}")))
    base, power = _POWERS.get(suffix, (10, exponent))
    with localcontext(Context(prec=200)):
        value = Decimal(f"{sign or '+'}{whole}.{fraction or '0'}") * Decimal(base) ** power
    text = f"{sign}{whole}{'' if fraction is None else '.' + fraction}{suffix}"
    return text, value


@given(quantities())
def test_stored_text_is_stored_unchanged(quantity: tuple[str, Decimal]) -> None:
    text, _ = quantity
    for resource_list in (False, True):
        try:
            stored = canonical_quantity(text, resource_list=resource_list)
        except QuantityError:
            assume(False)
            return
        assert canonical_quantity(stored, resource_list=resource_list) == stored
        assert quantity_value(stored, resource_list=resource_list) == quantity_value(text, resource_list=resource_list)


@given(quantities())
def test_the_number_is_kept(quantity: tuple[str, Decimal]) -> None:
    text, value = quantity
    binary = text.endswith("i")
    with localcontext(Context(prec=200)):
        assume(value % Decimal("1e-9") == 0 and not (binary and abs(value) > 2**63 - 1))
    try:
        stored = canonical_quantity(text)
    except QuantityError:
        assume(False)
        return
    assert quantity_value(text) == value
    assert quantity_value(stored) == value


@given(st.integers(-(10**20), 10**20))
def test_an_integer_reads_as_its_digits(number: int) -> None:
    assert canonical_quantity(number) == canonical_quantity(str(number))
    assert quantity_value(number) == number
