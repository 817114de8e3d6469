"""`gpu-operator dra match`: the report, the exit status, and errors that name the file, field or option."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.dra.command import EXIT_NO_MATCH
from tests.support.reference import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples" / "workloads" / "dra"


def write(tmp_path: Path, *documents: object) -> Path:
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return path


def template(count: int, selector: str | None = None) -> dict[str, object]:
    exactly: dict[str, object] = {"deviceClassName": "gpu.nvidia.com", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}], "constraints": [
                {"requests": ["gpus"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]}}}}


def test_the_examples_claims_fit_a_simulated_h100_node(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dra", "match", str(EXAMPLES / "claim-templates.yaml"), "--nvml", "fake:h100-8x"]) == EXIT_NO_MATCH
    out = capsys.readouterr().out
    assert "ResourceClaimTemplate one-h100:\n" in out
    assert "allocated: gpu: gpu-0" in out
    assert "allocated: gpus: gpu-0, gpu-1" in out
    # the MIG template needs a MIG node
    assert "ResourceClaimTemplate mig-1g-10gb:" in out and "NOT allocatable" in out
    assert main(["dra", "match", str(EXAMPLES / "shared-claim.yaml"), "--nvml", "fake:h100-8x"]) == 0
    assert "not evaluated: Pod two-containers-one-gpu" in capsys.readouterr().out


def test_a_mig_claim_on_a_mig_node(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    mig = yaml.safe_load_all((EXAMPLES / "claim-templates.yaml").read_text())
    [document] = [d for d in mig if d["metadata"]["name"] == "mig-1g-10gb"]
    assert main(["dra", "match", str(write(tmp_path, document)), "--nvml", "fake:a100-8x-mig"]) == 0
    assert "allocated: mig: gpu-0-mig-1g10gb-" in capsys.readouterr().out


def test_too_many_gpus_under_one_root_exit_3_with_the_reason(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    assert main(["dra", "match", str(write(tmp_path, template(5))), "--nvml", "fake:h100-8x"]) == EXIT_NO_MATCH
    assert "NOT allocatable: no combination of devices satisfies every request and constraint" in (
        capsys.readouterr().out)
    assert main(["dra", "match", str(write(tmp_path, template(4))), "--nvml", "fake:h100-8x"]) == 0


def test_the_slice_is_printed_on_request(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["dra", "match", str(write(tmp_path, template(1))), "--nvml", "fake:t4-1x", "--slice",
                 "--node", "t4-node"]) == 0
    out = capsys.readouterr().out
    slice_ = yaml.safe_load(out.split("---\n")[1])
    assert slice_["kind"] == "ResourceSlice" and slice_["spec"]["nodeName"] == "t4-node"
    assert slice_["spec"]["devices"][0]["attributes"]["productName"] == {"string": "Tesla T4"}


@pytest.mark.parametrize("args, wanted", [
    (["--nvml", "fake:nope"], "error: gpu-operator dra match: --nvml: no simulated GPU profile named 'nope'"),
    (["--nvml", "sim"], "error: gpu-operator dra match: --nvml: invalid NVML choice 'sim'"),
])
def test_a_bad_node_names_the_option(args: list[str], wanted: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dra", "match", str(write(tmp_path, template(1))), *args]) == 2
    assert capsys.readouterr().err.startswith(wanted)


def test_a_bad_selector_names_the_document_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, {"kind": "Pod"}, template(1, "device.attributes['gpu.nvidia.com'].minor == 0"))
    assert main(["dra", "match", str(path), "--nvml", "fake:h100-8x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: documents[1].spec.spec.devices.requests[0].exactly.selectors[0].cel."
                          "expression: reads attribute 'gpu.nvidia.com/minor'")


def test_a_file_without_claims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dra", "match", str(write(tmp_path, {"kind": "Pod"})), "--nvml", "fake:h100-8x"]) == 2
    assert "holds no ResourceClaim or ResourceClaimTemplate" in capsys.readouterr().err
    assert main(["dra", "match", str(tmp_path / "missing.yaml"), "--nvml", "fake:h100-8x"]) == 2


def test_the_nvml_comes_from_the_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_OPERATOR_NVML", "fake:h200-8x")
    assert main(["dra", "match", str(write(tmp_path, template(1)))]) == 0
    assert "NVIDIA H200" in capsys.readouterr().out
