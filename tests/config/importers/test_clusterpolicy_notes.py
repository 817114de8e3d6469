"""Fields of a ClusterPolicy manifest that are kept and change nothing are reported, as Helm values are."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_operator.config import parse_config
from gpu_operator.config.importers import ignored_clusterpolicy_values, import_clusterpolicy
from gpu_operator.render import render
from tests.config.importers.test_clusterpolicy_manifest import manifest, minimal_spec

#: section overrides → the spec path reported for them
INERT: list[tuple[dict[str, Any], str]] = [
    ({"dcgm": {"hostPort": 5555, "enabled": True}}, "spec.dcgm.hostPort"),
    ({"operator": {"initContainer": {"image": "cuda", "repository": "nvcr.io/nvidia", "version": "12.4.1"}}},
     "spec.operator.initContainer"),
    ({"operator": {"metrics": {"serviceMonitor": {"enabled": True}}}}, "spec.operator.metrics"),
    ({"cdi": {"default": True}}, "spec.cdi.default"),
    ({"driver": {"useOpenKernelModules": True}}, "spec.driver.useOpenKernelModules"),
    ({"toolkit": {"args": ["--debug"]}}, "spec.toolkit.args"),
    ({"gds": {"enabled": True, "args": ["--x"]}}, "spec.gds.args"),
    ({"kataManager": {"config": {"artifactsDir": "/opt/kata"}}}, "spec.kataManager"),
    ({"psp": {"enabled": True}}, "spec.psp.enabled"),
]


def _rendered(spec: dict[str, Any]) -> str:
    return json.dumps(render(parse_config(import_clusterpolicy(manifest(spec)))), sort_keys=True)


@pytest.mark.parametrize("sections, path", INERT, ids=[path for _, path in INERT])
def test_an_inert_field_is_reported_and_changes_nothing(sections: dict[str, Any], path: str) -> None:
    spec = minimal_spec(**sections)
    notes = ignored_clusterpolicy_values(manifest(spec))
    assert list(notes) == [path] and notes[path]
    # the claim the note makes: without the field the render is the same
    section, _, rest = path.removeprefix("spec.").partition(".")
    without = {**sections, section: {k: v for k, v in sections[section].items() if k != rest.split(".")[0]}}
    if not rest:
        without[section] = {}
    assert _rendered(spec) == _rendered(minimal_spec(**without))


def test_the_old_docker_default_is_dropped_with_a_note() -> None:
    data = manifest(minimal_spec(operator={"defaultRuntime": "docker"}))
    document = import_clusterpolicy(data)
    assert "defaultRuntime" not in document["operator"]["operator"]
    assert parse_config(document).cluster.container_runtime == "containerd"
    assert "cri-dockerd" in ignored_clusterpolicy_values(data)["spec.operator.defaultRuntime"]


def test_a_field_older_crds_had_is_dropped_with_a_note() -> None:
    # v22.9.0's ClusterPolicy had driver.rollingUpdate; today's API server prunes it, and so does the import
    data = manifest(minimal_spec(driver={"rollingUpdate": {"maxUnavailable": "1"}, "version": "550.90.07"}))
    document = import_clusterpolicy(data)
    assert "rollingUpdate" not in document["operator"]["driver"]
    assert document["operator"]["driver"]["version"] == "550.90.07"
    assert "OnDelete" in ignored_clusterpolicy_values(data)["spec.driver.rollingUpdate"]


def test_a_plain_clusterpolicy_has_no_notes() -> None:
    data = manifest(minimal_spec(operator={"defaultRuntime": "crio"}, psp={"enabled": False},
                                 kataManager={"enabled": False}))
    assert ignored_clusterpolicy_values(data) == {}
    assert ignored_clusterpolicy_values({"spec": None}) == {}
