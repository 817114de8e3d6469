"""The shared option table: flag over variable over default, Go booleans, errors that name the source."""

from __future__ import annotations

import argparse

import pytest

from gpu_operator.agents.options import Option, add_arguments, flag_option, resolve

OPTIONS = (
    Option("port", ("-p", "--port"), ("PORT", "LEGACY_PORT"), int, 8000, "the port"),
    flag_option("oneshot", ("--oneshot",), "ONESHOT", False, "label once"),
    Option("image", (), ("IMAGE",), str, "", "environment only"),
)


class Refused(ValueError):
    """The error the caller chose for refused values."""


def _cli(argv: list[str]) -> dict[str, str | None]:
    parser = argparse.ArgumentParser()
    add_arguments(parser, OPTIONS)
    return vars(parser.parse_args(argv))


def test_defaults_when_nothing_is_set() -> None:
    assert resolve(OPTIONS, _cli([]), {}, Refused) == {"port": 8000, "oneshot": False, "image": ""}


def test_flag_wins_over_the_variable_which_wins_over_the_default() -> None:
    environ = {"PORT": "9000", "LEGACY_PORT": "7000", "IMAGE": "x"}
    assert resolve(OPTIONS, _cli(["--port", "9400"]), environ, Refused)["port"] == 9400
    assert resolve(OPTIONS, _cli([]), environ, Refused)["port"] == 9000
    assert resolve(OPTIONS, _cli([]), {"LEGACY_PORT": "7000"}, Refused)["port"] == 7000
    assert resolve(OPTIONS, _cli([]), environ, Refused)["image"] == "x"


@pytest.mark.parametrize(("argv", "expected"), [(["--oneshot"], True), (["--oneshot=false"], False)])
def test_boolean_flags_bare_or_with_a_value(argv: list[str], expected: bool) -> None:
    assert resolve(OPTIONS, _cli(argv), {"ONESHOT": "true"}, Refused)["oneshot"] is expected


def test_environment_only_options_have_no_flag() -> None:
    with pytest.raises(SystemExit):
        _cli(["--image", "x"])


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [(["-p", "http"], {}, "invalid value 'http' for --port"), ([], {"ONESHOT": "yes"}, "invalid value 'yes' for ONESHOT")],
)
def test_a_refused_value_names_where_it_came_from(argv: list[str], environ: dict[str, str], message: str) -> None:
    with pytest.raises(Refused, match=message):
        resolve(OPTIONS, _cli(argv), environ, Refused)
