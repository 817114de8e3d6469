"""Every GPU Operator chart's own defaults from v22.9 to v26.7, and an air-gapped mirror's values, import and render.

Each file is the chart's `values.yaml` at its release tag (tests/data/helm-values/SOURCES.md, and the shared
reference data for v25.10.1 and v26.7.0). It must import without an error, report on stderr what no longer
applies, render, and pass strict schema validation (built-in kinds for the oldest and newest Kubernetes we
support, the ClusterPolicy spec against NVIDIA's CRD).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.config import parse_config
from gpu_operator.config.importers import ignored_helm_values, import_helm_values
from gpu_operator.config.importers.paths import merge_over
from gpu_operator.render import render
from gpu_operator.render.nfd import nfd_chart
from tests.config.importers.test_helm_values import assert_valid_clusterpolicy_spec
from tests.config.importers.values_files import V25, V26, chart_values
from tests.support.schemas import validate_objects

DATA = Path(__file__).parents[2] / "data" / "helm-values"
MIRROR_FILE = DATA / "mirrored-registry-values.yaml"
MIRROR = "myregistry.example.com/"

#: chart version → the notes its defaults must produce (what no longer applies), beyond the operator Deployment's
OLDER_CHARTS: dict[str, set[str]] = {
    "v22.9.0": {"driver.rollingUpdate", "dcgm.hostPort", "operator.defaultRuntime", "psp"},
    "v22.9.2": {"dcgm.hostPort", "operator.defaultRuntime", "psp", "operator.initContainer"},
    "v23.3.2": {"dcgm.hostPort", "operator.defaultRuntime", "psp", "operator.initContainer"},
    "v23.9.2": {"dcgm.hostPort", "operator.defaultRuntime", "kataManager", "operator.initContainer"},
    "v24.3.0": {"dcgm.hostPort", "operator.defaultRuntime", "kataManager"},
    "v24.9.2": {"operator.defaultRuntime", "kataManager"},
    "v25.3.4": {"kataManager", "operator.initContainer"},
}


def _local(version: str) -> dict[str, Any]:
    return yaml.safe_load((DATA / f"gpu-operator-{version}-values.yaml").read_text())


def _all_charts() -> list[Any]:
    local = [pytest.param(lambda v=version: _local(v), id=version) for version in OLDER_CHARTS]
    shared = [pytest.param(lambda f=f: chart_values(f), id=f.split("operator-")[1].split("-values")[0])
              for f in (V25, V26)]
    return local + shared


def _images(objects: list[dict[str, Any]]) -> set[str]:
    found = set()
    for obj in objects:
        pod = obj.get("spec", {}).get("template", {}).get("spec", {})
        for container in pod.get("initContainers", []) + pod.get("containers", []):
            found.add(container["image"])
    return found


def test_at_least_five_chart_versions_from_v22_9_to_v26_7() -> None:
    ids = [param.id for param in _all_charts()]
    assert len(ids) >= 5 and ids[0].startswith("v22.9") and ids[-1] == "v26.7.0"
    assert all((DATA / f"gpu-operator-{version}-values.yaml").is_file() for version in OLDER_CHARTS)


@pytest.mark.parametrize("load", _all_charts())
def test_chart_defaults_import_render_and_validate_strictly(load: Any) -> None:
    config = parse_config(import_helm_values(load()))
    objects = render(config)
    assert {"DaemonSet", "ServiceAccount", "ConfigMap"} <= {obj["kind"] for obj in objects}
    assert validate_objects(objects) == []
    assert_valid_clusterpolicy_spec(config)


@pytest.mark.parametrize("version", OLDER_CHARTS)
def test_older_chart_defaults_report_what_no_longer_applies(version: str) -> None:
    values = _local(version)
    notes = ignored_helm_values(values)
    assert OLDER_CHARTS[version] <= set(notes), set(notes)
    assert all(reason for reason in notes.values())
    # a value left empty (`cdi.default: false`, `gds.args: []`) has no effect anywhere, and is not noted
    assert not {"cdi.default", "driver.useOpenKernelModules", "gds.args"} & set(notes)


@pytest.mark.parametrize("version", ["v22.9.2", "v24.9.2"])
def test_the_old_docker_default_leaves_the_runtime_to_the_nodes(version: str) -> None:
    # `defaultRuntime: docker` was the chart's default, never what NVIDIA deployed for: it detects the runtime
    config = parse_config(import_helm_values(_local(version)))
    assert config.cluster.container_runtime == "containerd"
    assert config.operator.operator.default_runtime is None
    assert "cri-dockerd" in ignored_helm_values(_local(version))["operator.defaultRuntime"]


def test_the_default_mig_configmap_the_older_charts_named_is_ours() -> None:
    # v23.3 to v24.3 named the ConfigMap the operator creates itself; the operand here creates it too
    config = parse_config(import_helm_values(_local("v23.9.2")))
    assert config.operator.mig_manager.config.name == ""
    names = {obj["metadata"]["name"] for obj in render(config) if obj["kind"] == "ConfigMap"}
    assert "default-mig-parted-config" in names


def test_the_cli_imports_an_old_chart_with_notes_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import-values", str(DATA / "gpu-operator-v22.9.2-values.yaml")]) == 0
    out, err = capsys.readouterr()
    assert parse_config(yaml.safe_load(out)).operator.driver.version == "525.60.13"
    assert "note: dcgm.hostPort" in err and "note: operator.defaultRuntime" in err


# --- an air-gapped mirror ---------------------------------------------------------------------------------------

#: values that switch on every operand the mirror file's images serve, on top of the file
_EVERY_CONTAINER_OPERAND = {
    "dcgm": {"enabled": True}, "nodeStatusExporter": {"enabled": True}, "gds": {"enabled": True},
    "gdrcopy": {"enabled": True}, "driver": {"rdma": {"enabled": True}},
}
_SANDBOX = {"sandboxWorkloads": {"enabled": True}, "vgpuManager": {"enabled": True, "version": "550.90.05"}}
_KATA = {"sandboxWorkloads": {"enabled": True, "mode": "kata"}}


@pytest.mark.parametrize("extra", [{}, _EVERY_CONTAINER_OPERAND, _SANDBOX, _KATA],
                         ids=["as-written", "every-container-operand", "sandbox-kubevirt", "sandbox-kata"])
def test_a_mirrored_registry_keeps_every_image_on_the_mirror(extra: dict[str, Any]) -> None:
    values = merge_over(yaml.safe_load(MIRROR_FILE.read_text()), extra)
    config = parse_config(import_helm_values(values))
    objects = render(config)
    images = _images(objects)
    assert images and [image for image in images if not image.startswith(MIRROR)] == []
    assert validate_objects(objects) == []
    assert_valid_clusterpolicy_spec(config)
    chart = nfd_chart(config)
    assert chart is not None and chart.values["image"]["repository"].startswith(MIRROR)


def test_the_mirror_file_covers_every_nvidia_image_of_the_chart() -> None:
    # every section of the v26.7.0 chart with a repository is pointed at the mirror by the file
    mirror = yaml.safe_load(MIRROR_FILE.read_text())
    chart = chart_values(V26)

    def repositories(values: dict[str, Any], prefix: str = "") -> set[str]:
        found = set()
        for key, value in values.items():
            if isinstance(value, dict):
                found |= repositories(value, f"{prefix}{key}.")
            elif key == "repository":
                found.add(prefix.rstrip("."))
        return found

    assert repositories(chart) <= repositories(mirror)
