"""Inputs that look odd but are fine: each renders what its plain equivalent renders (and an empty one says so)."""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.config import parse_config
from gpu_operator.render import render

EMPTY_NOTE = "holds an empty document: rendering it (the GPU Operator chart's defaults)"
MIXED = {"operator": {"mig": {"strategy": "mixed"}}}


def case(name: str, content: str | bytes, document: dict, note: str = "") -> Any:
    return pytest.param(content, document, note, id=name)


@pytest.mark.parametrize(("content", "document", "note"), [
    case("empty file", "", {}, EMPTY_NOTE),
    case("only comments", "# nothing set yet\n", {}, EMPTY_NOTE),
    case("empty mapping", "{}\n", {}, EMPTY_NOTE),
    case("document markers", "---\noperator: {mig: {strategy: mixed}}\n...\n", MIXED),
    case("trailing empty document", "operator: {mig: {strategy: mixed}}\n---\n", MIXED),
    case("UTF-8 byte-order mark", codecs.BOM_UTF8 + b"operator: {mig: {strategy: mixed}}\n", MIXED),
    case("CRLF line endings", "operator:\r\n  mig:\r\n    strategy: mixed\r\n", MIXED),
    case("non-ASCII comment", "# Konfiguration für H100 — ünïcödé\noperator: {mig: {strategy: mixed}}\n", MIXED),
    case("anchor and alias", "operator:\n  driver: &off {enabled: false}\n  toolkit: *off\n",
         {"operator": {"driver": {"enabled": False}, "toolkit": {"enabled": False}}}),
    case("merge key overridden", "operator:\n  driver: &on {enabled: true, imagePullPolicy: Always}\n"
                                 "  toolkit: {<<: *on, enabled: false}\n",
         {"operator": {"driver": {"enabled": True, "imagePullPolicy": "Always"},
                       "toolkit": {"enabled": False, "imagePullPolicy": "Always"}}}),
    case("same key in sibling mappings", "operator:\n  driver: {enabled: true}\n  toolkit: {enabled: true}\n",
         {"operator": {"driver": {"enabled": True}, "toolkit": {"enabled": True}}}),
    case("quoted yes", "operator: {daemonsets: {labels: {team: 'yes'}}}\n",
         {"operator": {"daemonsets": {"labels": {"team": "yes"}}}}),
])
def test_tricky_but_valid_input_renders_like_its_plain_document(
    content: str | bytes, document: dict, note: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.yaml"
    config.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert main(["render", "-f", str(config)]) == 0
    out, err = capsys.readouterr()
    assert list(yaml.safe_load_all(out)) == render(parse_config(document))
    assert (note in err) if note else ("holds an empty" not in err)


def test_an_empty_values_file_imports_the_defaults_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("# no overrides\n")
    assert main(["import-values", str(values)]) == 0
    out, err = capsys.readouterr()
    parse_config(yaml.safe_load(out))
    assert f"note: {values} is empty: importing the chart's defaults" in err


def test_a_clusterpolicy_import_notes_the_fields_that_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "cp.yaml"
    manifest.write_text("apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
                        "spec:\n  dcgm: {enabled: true, hostPort: 5555}\n")
    assert main(["import-values", str(manifest)]) == 0
    out, err = capsys.readouterr()
    parse_config(yaml.safe_load(out))
    assert "note: spec.dcgm.hostPort has no effect here: NVIDIA's operator has not used it since v24.9" in err
