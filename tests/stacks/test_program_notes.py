"""The stack program tells at `pulumi preview` / `up` what `gpu-operator render` tells about the same document.

A setting that has no effect (the Network Operator's namespace without an InfiniBand pool, claim-template
namespaces with DRA off), what an InfiniBand pool adds, or an alert left out is a note of the render; the program
logs each as a warning, through the engine (here the mocks' engine, whose log is Python's root logger).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.config import parse_config
from gpu_operator.render.notes import render_notes
from tests.support.stack_programs import STACKS_DIR, run_program_file

# with the agents image, so the controller runs (without it the render says remediation and upgrades are off), and
# the nodes' OS (without pools or it the render says which it assumes)
QUIET = {"operator": {"mig": {"strategy": "mixed"}},
         "cluster": {"operatingSystems": [{"id": "ubuntu", "versionId": "22.04"}]},
         "agents": {"image": {"repository": "example.azurecr.io/gpu-operator-agents", "tag": "1.0.0"}}}
UNUSED = {**QUIET, "network": {"namespace": "nw"}, "dra": {"namespaces": {"ml": "existing"}}}


def _warnings(document: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> list[str]:
    stack_file = tmp_path / "Pulumi.notes.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {"gpu-operator:kubeconfig": "apiVersion-v1-kubeconfig",
                                                     "gpu-operator:config": document}}))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        run_program_file(STACKS_DIR / "__main__.py", stack_file, project="gpu-operator")
    return [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]


def _render_notes(document: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(document))
    assert main(["render", "-f", str(path)]) == 0
    return [line.removeprefix("note: ") for line in capsys.readouterr().err.splitlines()
            if line.startswith("note: ") and " also installs " not in line]


def test_the_program_warns_each_note_the_render_prints(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    notes = render_notes(parse_config(UNUSED))
    assert [note.split(" ", 1)[0] for note in notes] == ["network.namespace", "dra.namespaces"]
    warned = _warnings(UNUSED, tmp_path, caplog)
    assert [message for message in warned if message in notes] == notes
    assert _render_notes(UNUSED, tmp_path, capsys) == notes


def test_a_document_without_notes_brings_no_such_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert render_notes(parse_config(QUIET)) == []
    assert [message for message in _warnings(QUIET, tmp_path, caplog) if "has no effect" in message] == []
    assert _render_notes(QUIET, tmp_path, capsys) == []
