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


# --- the report: a summary per request by default, every device with -v (issue 22, item 15) ----------------------

SUMMARY_CASES = [
    # (claim file, node, lines the summary holds, lines only -v prints)
    ("claim-templates.yaml", "fake:h100-8x",
     ["  request gpu: 1 of gpu.nvidia.com, 8 of 8 devices match",
      "    match: gpu-0, gpu-1, gpu-2, gpu-3, ... (8 in all)",
      "  request mig: 1 of mig.nvidia.com, 0 of 8 devices match",
      "    no (8): DeviceClass mig.nvidia.com is false: gpu-0, gpu-1, gpu-2, gpu-3, ... (8 in all)",
      "  allocated: gpu: gpu-0"],
     ["    gpu-7                        NVIDIA H100 80GB HBM3  pci0000:80  memory 81559Mi  -> match",
      "-> no: DeviceClass mig.nvidia.com is false"]),
    ("claim-templates.yaml", "fake:a100-8x-mig",
     ["  request mig: 1 of mig.nvidia.com, 56 of 56 devices match", "    no (56): DeviceClass gpu.nvidia.com is false"],
     ["-> no: DeviceClass gpu.nvidia.com is false"]),
]


@pytest.mark.parametrize(("claims", "node", "summary", "details"), SUMMARY_CASES)
def test_a_summary_per_request_by_default_and_every_device_with_v(
    claims: str, node: str, summary: list[str], details: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The verdicts are those of `gpu_operator.dra.match` (the scheduler's rules, kubernetes/kubernetes
    `staging/src/k8s.io/dynamic-resource-allocation/structured/allocator.go`); only their presentation differs."""
    main(["dra", "match", str(EXAMPLES / claims), "--nvml", node])
    short = capsys.readouterr().out
    main(["dra", "match", str(EXAMPLES / claims), "--nvml", node, "-v"])
    long = capsys.readouterr().out
    for line in summary:
        assert line in short
    for line in details:
        assert line not in short and line in long
    assert len(short.splitlines()) < len(long.splitlines())


def test_the_summary_names_the_first_reasons_only() -> None:
    """Five devices failing for five reasons and one matching: the match, three reasons with their devices, and a
    count of the others; `verbose` lists all six."""
    import io

    from gpu_operator.dra.command import _FIRST_REASONS, _report
    from gpu_operator.dra.match import Candidate, MatchResult, RequestResult
    from gpu_operator.dra.slices import PublishedDevice

    devices = [PublishedDevice("gpu.nvidia.com", f"gpu-{i}", {"productName": "NVIDIA H100"}, {}) for i in range(6)]
    candidates = [Candidate(devices[0], True)] + [Candidate(d, False, f"selector {i} is false")
                                                  for i, d in enumerate(devices[1:])]
    result = MatchResult("t", [RequestResult("gpus", "gpu.nvidia.com", 1, candidates)], {"gpus": ["gpu-0"]})
    short, long = io.StringIO(), io.StringIO()
    _report(result, "ResourceClaim", short)
    _report(result, "ResourceClaim", long, verbose=True)
    assert short.getvalue().splitlines() == [
        "ResourceClaim t:",
        "  request gpus: 1 of gpu.nvidia.com, 1 of 6 devices match",
        "    match: gpu-0",
        *[f"    no (1): selector {i} is false: gpu-{i + 1}" for i in range(_FIRST_REASONS)],
        f"    ... {5 - _FIRST_REASONS} more reasons (-v lists every device)",
        "  allocated: gpus: gpu-0",
    ]
    assert [line.split()[0] for line in long.getvalue().splitlines()[2:-1]] == [d.name for d in devices]
