"""`gpu-operator images`: every image and chart a config pulls, with the mirror's reference for each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_operator.cli import main
from gpu_operator.render import render_operands
from gpu_operator.render.stack import stack_objects
from gpu_operator.config import parse_config

MIRRORED = "registry: mirror.example.com:5000/gpu\ncluster: {operatingSystems: [{id: ubuntu, versionId: '22.04'}]}\n"


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, *options: str) -> str:
    config = tmp_path / "config.yaml"
    config.write_text(text, encoding="utf-8")
    assert main(["images", "-f", str(config), *options]) == 0
    return capsys.readouterr().out


def test_every_container_image_of_the_render_is_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(_run(tmp_path, capsys, "namespace: gpu-operator\n", "-o", "json"))
    objects = stack_objects(parse_config({}), render_operands(parse_config({})))
    rendered = {c["image"] for o in objects if o["kind"] == "DaemonSet"
                for c in [*o["spec"]["template"]["spec"].get("initContainers", []),
                          *o["spec"]["template"]["spec"]["containers"]]}
    listed = {image["image"] for image in report["images"]}
    assert rendered <= listed
    assert listed - rendered == {"registry.k8s.io/nfd/node-feature-discovery:v0.19.0"}  # the NFD chart's
    assert report["registry"] is None and all(image["mirror"] is None for image in report["images"])
    assert [chart["chart"] for chart in report["charts"]] == ["node-feature-discovery"]


def test_pairs_give_each_image_and_its_mirror(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _run(tmp_path, capsys, MIRRORED, "-o", "pairs").splitlines()
    pairs = dict(line.split(" ") for line in lines)
    assert pairs["nvcr.io/nvidia/driver:595.91.07-ubuntu22.04"] == \
           "mirror.example.com:5000/gpu/nvidia/driver:595.91.07-ubuntu22.04"
    assert all(target.startswith("mirror.example.com:5000/gpu/") for target in pairs.values())


def test_the_text_report_names_the_mirror_and_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(tmp_path, capsys, MIRRORED)
    assert out.splitlines()[0].split() == ["IMAGE", "MIRROR", "PULLED", "BY"]
    assert "oci://mirror.example.com:5000/gpu/nfd/charts/node-feature-discovery" in out
    assert out.splitlines()[-1].endswith("Helm chart; mirror mirror.example.com:5000/gpu")
