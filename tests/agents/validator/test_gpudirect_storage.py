"""GPUDirect Storage validation from the config to the node: `operator.gds.enabled` through the rendered driver
DaemonSet and its startup probe to the validator's driver check, which then requires `nvidia_fs`.

NVIDIA's chain (reference/gpu-operator.md §3.1, §3.3, §5.2): with GDS on, the driver container gets
`GDS_ENABLED=true` (and an `nvidia-fs-ctr` sidecar builds the module); its startup probe copies the flag into
`/run/nvidia/validations/.driver-ctr-ready`; the driver validation reads that file from the same host directory
and, for each flag that is on, checks the module (`nvidia_fs` for GDS) and writes its status file
(`nvidia-fs-ready`) before `driver-ready`. The validator DaemonSet has no init container of its own for GDS.
Here the rendered objects are run for real: the probe script with the rendered env, the driver check (our agent)
against a node whose loaded modules the test chooses.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from gpu_operator.agents.validator import ValidationFailed
from gpu_operator.agents.validator.driver import driver
from gpu_operator.render.operands import driver as driver_operand
from gpu_operator.render.operands import operator_validator
from tests.agents.kube.fake_apiserver import FakeApiServer
from tests.agents.validator.helpers import NAMESPACE, Node, context, node_tree
from tests.render.operands.helpers import container, env_of, find, render_operand

VALIDATIONS = "/run/nvidia/validations"
GDS_ON = {"namespace": NAMESPACE, "operator": {"gds": {"enabled": True}}}
GDS_OFF = {"namespace": NAMESPACE}


def _host_path(ds: dict[str, Any], container_name: str, path: str) -> str:
    """Where `path` inside the container lives on the host, through its hostPath mounts."""
    volumes = {v["name"]: v["hostPath"]["path"] for v in ds["spec"]["template"]["spec"]["volumes"] if "hostPath" in v}
    target = PurePosixPath(path)
    best: tuple[PurePosixPath, str] | None = None
    for item in container(ds, container_name).get("volumeMounts", []):
        mount = PurePosixPath(item["mountPath"])
        if (
            item["name"] in volumes
            and target.is_relative_to(mount)
            and (best is None or len(mount.parts) > len(best[0].parts))
        ):
            best = (mount, volumes[item["name"]])
    assert best is not None, f"{path} is not on a hostPath mount of {container_name}"
    return str(PurePosixPath(best[1]) / target.relative_to(best[0]))


def _driver_objects(document: dict[str, Any]) -> tuple[dict[str, Any], str]:
    objects = render_operand(driver_operand.render, document)
    ds = find(objects, "DaemonSet", "nvidia-driver-daemonset")
    script = next(iter(find(objects, "ConfigMap", driver_operand.STARTUP_PROBE_CONFIG_MAP)["data"].values()))
    return ds, script


def _run_startup_probe(ds: dict[str, Any], script: str, node: Node, tmp_path: Path) -> None:
    """The rendered probe script with the rendered driver container's env, on a node where the driver works."""
    refcount = tmp_path / "refcnt"
    refcount.write_text("1\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3'\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    plain = {k: v for k, v in env_of(container(ds, "nvidia-driver-ctr")).items() if isinstance(v, str)}
    probe = tmp_path / "startup-probe.sh"
    probe.write_text(script.replace(VALIDATIONS, str(node.status)).replace("/sys/module/nvidia/refcnt", str(refcount)))
    result = subprocess.run(
        ["sh", str(probe)],
        env={**plain, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr


@pytest.fixture
def node(tmp_path: Path) -> Node:
    root = tmp_path / "node"
    root.mkdir()
    return node_tree(root)


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        yield running


def _validate_driver(document: dict[str, Any], node: Node, server: FakeApiServer, tmp_path: Path) -> None:
    ds, script = _driver_objects(document)
    server.add(ds)  # the driver DaemonSet the check looks for: an operator-managed containerized driver
    _run_startup_probe(ds, script, node, tmp_path)
    driver(context(node, server, driver_install_dir="/run/nvidia/driver"))


def test_the_probe_writes_where_the_driver_validation_reads() -> None:
    ds, _ = _driver_objects(GDS_ON)
    validator = find(render_operand(operator_validator.render, GDS_ON), "DaemonSet", "nvidia-operator-validator")
    written = _host_path(ds, "nvidia-driver-ctr", f"{VALIDATIONS}/.driver-ctr-ready")
    read = _host_path(validator, "driver-validation", f"{VALIDATIONS}/.driver-ctr-ready")
    assert written == read == f"{VALIDATIONS}/.driver-ctr-ready"


def test_gds_adds_no_validation_container_to_the_validator() -> None:
    # NVIDIA's validator DaemonSet has no nvidia-fs-validation init container (its nvidia-fs transform finds
    # nothing to keep): GDS is validated inside driver-validation, from the flags in .driver-ctr-ready.
    def validator(document: dict[str, Any]) -> dict[str, Any]:
        return find(render_operand(operator_validator.render, document), "DaemonSet", "nvidia-operator-validator")

    assert validator(GDS_ON) == validator(GDS_OFF)
    names = [c["name"] for c in validator(GDS_ON)["spec"]["template"]["spec"]["initContainers"]]
    assert names == ["driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation"]


def test_gds_on_checks_nvidia_fs_before_the_driver_is_ready(node: Node, server: FakeApiServer, tmp_path: Path) -> None:
    node.load_modules("nvidia_fs")
    _validate_driver(GDS_ON, node, server, tmp_path)
    assert "GDS_ENABLED: true" in (node.status / ".driver-ctr-ready").read_text()
    assert (node.status / "nvidia-fs-ready").exists()
    assert (node.status / "driver-ready").exists()
    assert not (node.status / "gdrcopy-ready").exists() and not (node.status / "nvidia-peermem-ready").exists()


def test_gds_on_without_nvidia_fs_fails_the_driver_validation(
    node: Node, server: FakeApiServer, tmp_path: Path
) -> None:
    with pytest.raises(ValidationFailed, match="kernel module nvidia_fs is not loaded"):
        _validate_driver(GDS_ON, node, server, tmp_path)
    assert not (node.status / "nvidia-fs-ready").exists()
    assert not (node.status / "driver-ready").exists()


def test_gds_off_does_not_ask_for_nvidia_fs(node: Node, server: FakeApiServer, tmp_path: Path) -> None:
    _validate_driver(GDS_OFF, node, server, tmp_path)
    assert "GDS_ENABLED: false" in (node.status / ".driver-ctr-ready").read_text()
    assert (node.status / "driver-ready").exists()
    assert not (node.status / "nvidia-fs-ready").exists()
