"""Strict YAML reading: what plain safe_load lets through is refused with the file, the place and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_operator.config import ConfigError
from gpu_operator.config.loader import read_yaml_mapping
from gpu_operator.config.yaml_reader import (
    MAX_DEPTH,
    MAX_EXPANDED_SIZE,
    RefusedYamlError,
    StrictLoader,
    parse_yaml_documents,
    parse_yaml_value,
    read_text,
    read_yaml_document,
    read_yaml_documents,
)


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_yaml_documents(text, "t.yaml")
    assert caught.value.source == "t.yaml"
    return [str(problem) for problem in caught.value.problems]


def test_plain_yaml_would_let_a_duplicate_key_win_silently() -> None:
    text = "driver:\n  version: '1'\n  version: '2'\n"
    assert yaml.safe_load(text) == {"driver": {"version": "2"}}
    assert problems(text) == [
        "driver.version: duplicate key (lines 2 and 3): YAML would silently keep only the second; remove one, "
        "or merge them"
    ]


def test_every_duplicate_is_listed() -> None:
    found = problems("a: 1\nb: {x: 1, x: 2}\nc: [{y: 1, y: 2}]\na: 3\n")
    assert [problem.split(":")[0] for problem in found] == ["b.x", "c[0].y", "a"]


def test_keys_equal_after_resolution_are_duplicates_but_distinct_types_are_not() -> None:
    assert problems("x: {1: a, 0x1: b}\n") == [
        "x.0x1: duplicate key (lines 1 and 1): YAML would silently keep only the second; remove one, or merge them"
    ]
    assert parse_yaml_documents("x: {1: a, '1': b}\n", "t.yaml") == [{"x": {1: "a", "1": "b"}}]


def test_merge_keys_may_be_overridden() -> None:
    text = "base: &b {x: 1, y: 2}\nderived: {<<: *b, x: 3}\n"
    assert parse_yaml_documents(text, "t.yaml") == [{"base": {"x": 1, "y": 2}, "derived": {"x": 3, "y": 2}}]


def test_the_loader_refuses_through_yaml_load_too() -> None:
    with pytest.raises(RefusedYamlError, match="a: duplicate key"):
        yaml.load("a: 1\na: 2\n", Loader=StrictLoader)  # noqa: S506 - StrictLoader is a SafeLoader
    with pytest.raises(yaml.YAMLError, match=f"nested deeper than {MAX_DEPTH} levels"):
        yaml.load("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), Loader=StrictLoader)  # noqa: S506


def test_nesting_up_to_the_limit_is_read() -> None:
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    value = parse_yaml_documents(text, "t.yaml")[0]
    depth = 0
    while value:
        value, depth = value[0], depth + 1
    assert depth == MAX_DEPTH - 1
    assert "nested deeper" in problems("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))[0]


def test_nesting_far_beyond_pythons_recursion_limit_is_a_problem_not_a_recursion_error() -> None:
    assert "nested deeper than 100 levels" in problems("a: " + "[" * 100_000)[0]
    assert "nested deeper than 100 levels" in problems("".join("  " * i + "k:\n" for i in range(2_000)))[0]


def test_aliases_are_measured_as_expanded() -> None:
    shared = "x: &x [" + ", ".join(["abcdefgh"] * 100) + "]\n"
    modest = shared + "y: [" + ", ".join(["*x"] * 100) + "]\n"
    assert len(parse_yaml_documents(modest, "t.yaml")[0]["y"]) == 100
    # each further level multiplies by 10: l3 passes MAX_EXPANDED_SIZE
    anchors = ["x", "l0", "l1", "l2", "l3", "l4"]
    bomb = shared + "".join(f"{name}: &{name} [{', '.join(['*' + below] * 10)}]\n"
                            for below, name in zip(anchors, anchors[1:]))
    assert 9 * 100 * 10**3 < MAX_EXPANDED_SIZE < 9 * 100 * 10**4
    assert problems(bomb) == [
        f"l3: line 5: aliases (*name) expand this value to more than {MAX_EXPANDED_SIZE:,} nodes and characters "
        "(a YAML alias bomb?); write the values out, or alias fewer times"
    ]


def test_a_recursive_alias_is_refused() -> None:
    assert problems("a: &a [1, *a]\n") == [
        "a[1]: line 1: an alias refers to the collection that contains it (a recursive anchor); "
        "write the value out instead"
    ]


def test_syntax_errors_name_the_line_and_column_and_the_fix() -> None:
    assert problems("a:\n  b: 1\n c: 2\n") == [
        "not valid YAML: line 3, column 2: expected <block end>, but found '<block mapping start>' (while parsing "
        "a block mapping at line 1); check the indentation of this line and the one before"
    ]


def test_documents_of_a_stream_are_all_read_and_empty_ones_dropped(tmp_path: Path) -> None:
    path = tmp_path / "many.yaml"
    path.write_text("---\na: 1\n---\n---\nb: 2\n")
    assert read_yaml_documents(path) == [{"a": 1}, {"b": 2}]
    with pytest.raises(ConfigError, match="holds 2 YAML documents"):
        read_yaml_document(path)


def test_anchors_do_not_reach_across_documents() -> None:
    assert "found undefined alias 'a'" in problems("x: &a 1\n---\ny: *a\n")[0]


def test_an_empty_file_is_the_empty_document(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert read_yaml_document(path) is None
    assert read_yaml_mapping(path) == {}


def test_an_unreadable_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text("a: 1\n")

    def denied(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", denied)
    with pytest.raises(ConfigError) as caught:
        read_text(path)
    assert str(caught.value.problems[0]) == (
        "cannot be read: permission denied; make the file readable by this user (chmod u+r)"
    )
    assert caught.value.source == str(path)


def test_a_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert read_text(path) == "a: 1\n"


@pytest.mark.parametrize(("text", "expected"), [
    ("a: b: c", "not valid YAML: line 1, column 5: mapping values are not allowed here"),
    ("[" * 3000, "nested deeper than 100 levels"),
    ("version: v1\nversion: v2\n", "version: duplicate key (lines 1 and 2)"),
    ("a,b\n\x00", "control character U+0000"),
    ("a: 1\n---\nb: 2\n", "holds 2 YAML documents"),
])
def test_yaml_text_inside_a_value_is_one_line_value_error(text: str, expected: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_yaml_value(text)
    assert expected in str(caught.value) and "\n" not in str(caught.value)
    assert not isinstance(caught.value, ConfigError)


def test_yaml_text_inside_a_value_is_read() -> None:
    assert parse_yaml_value("version: v1\nflags: {migStrategy: none}\n") == {"version": "v1",
                                                                              "flags": {"migStrategy": "none"}}
    assert parse_yaml_value("# nothing\n") is None


@pytest.mark.parametrize(("text", "value"), [
    ("yes", "true"), ("No", "false"), ("on", "true"), ("OFF", "false"),
    ("1_000", "1000"), ("0600", "384"), ("1:30", "90"), ("0b101", "5"), ("1_000.5", "1000.5"),
])
def test_a_value_yaml_1_2_reads_otherwise_is_refused_in_a_config_document(text: str, value: str,
                                                                          tmp_path: Path) -> None:
    """PyYAML reads YAML 1.1; Pulumi reads stack files as YAML 1.2 (go-yaml v3), where `yes` is a word, `1_000`
    and `1:30` text and `0600` the number 600. The config document must mean one thing to both."""
    path = tmp_path / "c.yaml"
    path.write_text(f"operator:\n  psa:\n    enabled: {text}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        read_yaml_mapping(path, yaml12=True)
    assert [str(problem) for problem in caught.value.problems] == [
        f"operator.psa.enabled: line 3: {text} is {value} to this reader (YAML 1.1) but not to YAML 1.2 readers such "
        f"as Pulumi's, which deploy the stack: write {'true or false' if value in ('true', 'false') else value}, or "
        f"quote it ('{text}') for the text"]


@pytest.mark.parametrize("text", ["true", "False", "600", "0", "-3", "0x1F", "1.5", "1e3", ".inf", "'yes'", "\"1_000\"",
                                  "yes please"])
def test_values_both_yaml_versions_read_alike_pass(text: str, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"value: {text}\nyes: keys are checked apart\n", encoding="utf-8")
    assert "value" in read_yaml_mapping(path, yaml12=True)


def test_helm_values_keep_yaml_1_1_as_helm_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text("driver:\n  enabled: yes\n", encoding="utf-8")
    assert read_yaml_mapping(path) == {"driver": {"enabled": True}}
