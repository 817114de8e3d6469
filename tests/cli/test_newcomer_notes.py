"""What a newcomer is not told otherwise (issue 22, items 9, 12-14): what an InfiniBand pool adds, a `check` of
NVIDIA's defaults without noise, one object count everywhere, and a summary that says whose program runs and how
each pool's GPUs are allocated.

Upstream facts behind the expectations:
* NVIDIA's chart `deployments/gpu-operator/values.yaml` (`psa.enabled: false`, operand `resources: {}`) and the
  ClusterPolicy transform `controllers/object_controls.go` `transformDevicePlugin`/`applyCommonDaemonsetConfig`
  (a section's `resources` go to every container of its DaemonSet): so the fix names `operator.<section>.resources`;
* Azure/aks-rdma-infiniband `README.md` / `scripts/` (`az feature register --name AKSInfinibandSupport` before the
  IB pool) and `configs/values/gpu-operator/values.yaml` (`nfd.enabled: false`: one NFD, the Network Operator's).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.cli import main
from tests.support.agents import with_agents

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
IB_POOL = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}
T4_POOL = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}


def _write(tmp_path: Path, document: dict[str, Any]) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return str(path)


# --- item 9: an InfiniBand pool says what it adds -------------------------------------------------------------------

NOTE_CASES = [
    ("ib pool", {"aks": AKS, "pools": [IB_POOL]},
     ["pool h100 (Standard_ND96isr_H100_v5) has InfiniBand", "NVIDIA's Network Operator",
      "a DOCA-OFED driver container", "Node Feature Discovery in place of the GPU operator's",
      "set network.enabled: false"]),
    ("host mofed: no driver container", {"aks": AKS, "pools": [IB_POOL], "network": {"mofed": "host"}},
     ["has InfiniBand", "NVIDIA's Network Operator"]),
    ("network off", {"aks": AKS, "pools": [IB_POOL], "network": {"enabled": False}}, []),
    ("no infiniband", {"aks": AKS, "pools": [T4_POOL]}, []),
]


@pytest.mark.parametrize(("document", "expected"), [c[1:] for c in NOTE_CASES], ids=[c[0] for c in NOTE_CASES])
def test_render_notes_what_an_infiniband_pool_adds(document: dict[str, Any], expected: list[str], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-f", _write(tmp_path, document)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "InfiniBand" in line]
    if not expected:
        assert notes == []
        return
    [note] = notes
    assert note.startswith("note: ")
    for part in expected:
        assert part in note
    if document.get("network", {}).get("mofed") == "host":
        assert "DOCA-OFED" not in note


CHECK_CASES = [
    ("chart defaults", {}, []),
    ("built-in default", None, []),
    ("ib pool without the feature", {"aks": AKS, "pools": [IB_POOL]}, ["infiniband-feature-registered"]),
    ("ib pool with the feature", {"aks": {**AKS, "registerInfinibandFeature": True}, "pools": [IB_POOL]}, []),
    ("no infiniband", {"aks": AKS, "pools": [T4_POOL]}, []),
]


@pytest.mark.parametrize(("document", "expected"), [c[1:] for c in CHECK_CASES], ids=[c[0] for c in CHECK_CASES])
def test_check_prints_nothing_on_defaults_and_flags_an_unregistered_infiniband_pool(
    document: dict[str, Any] | None, expected: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", "--output", "json"] + ([] if document is None else ["-f", _write(tmp_path, document)])
    assert main(args) == 0  # advisories only
    report = json.loads(capsys.readouterr().out)
    assert [v["policy"] for v in report["violations"]] == expected
    for violation in report["violations"]:
        assert violation["resource"] == "AgentPool h100"
        assert "aks.registerInfinibandFeature" in violation["message"]
        assert "aks.registerInfinibandFeature: true" in violation["remediation"]


# --- item 12: production advice names the exact key -------------------------------------------------------------

PRODUCTION_KEYS = [
    ("DaemonSet gpu-operator/nvidia-device-plugin-daemonset", "operator.devicePlugin.resources.requests"),
    ("DaemonSet gpu-operator/nvidia-device-plugin-mps-control-daemon", "operator.devicePlugin.resources.requests"),
    ("DaemonSet gpu-operator/nvidia-driver-daemonset", "operator.driver.resources.requests"),
    ("DaemonSet gpu-operator/nvidia-container-toolkit-daemonset", "operator.toolkit.resources.requests"),
    ("DaemonSet gpu-operator/gpu-feature-discovery", "operator.gfd.resources.requests"),
    ("DaemonSet gpu-operator/nvidia-mig-manager", "operator.migManager.resources.requests"),
    ("DaemonSet gpu-operator/nvidia-operator-validator", "operator.validator.resources.requests"),
    ("Namespace gpu-operator", "operator.psa.enabled: true"),
]


def test_production_advice_names_the_exact_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--production", "--output", "json", "-f", _write(tmp_path, {})]) == 0
    violations = json.loads(capsys.readouterr().out)["violations"]
    # without the operator controller the driver rolls by itself, which production is told to change
    [rollout] = [v for v in violations if v["policy"] == "driver-changes-reach-nodes"]
    assert rollout["resource"] == "DaemonSet gpu-operator/nvidia-driver-daemonset"
    assert "agents.image" in rollout["remediation"]
    found = {v["resource"]: v["message"] for v in violations if v is not rollout}
    for resource, key in PRODUCTION_KEYS:
        assert key in found.pop(resource), resource
    assert found == {}
    # set where the findings say, they go
    fixed = with_agents({"operator": {"psa": {"enabled": True}, **{
        section: {"resources": {"requests": {"cpu": "10m"}}}
        for section in ("devicePlugin", "driver", "toolkit", "gfd", "migManager", "validator")}}})
    assert main(["check", "--production", "--output", "json", "-f", _write(tmp_path, fixed)]) == 0
    assert json.loads(capsys.readouterr().out)["violations"] == []


def test_a_psa_label_refusing_privileged_pods_is_flagged_without_production(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpu_operator.policy import POLICIES, PolicyContext

    [policy] = [p for p in POLICIES if p.name == "psa-label-for-privileged-pods"]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "gpu-operator", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}}
    driver = {"kind": "DaemonSet", "metadata": {"name": "nvidia-driver-daemonset", "namespace": "gpu-operator"},
              "spec": {"template": {"spec": {"containers": [{"name": "c", "securityContext": {"privileged": True}}]}}}}
    [violation] = policy.evaluate([namespace, driver], PolicyContext())
    assert "pod-security.kubernetes.io/enforce: baseline refuses them" in violation.message


# --- item 13: one object count -----------------------------------------------------------------------------------

def test_render_summary_and_check_count_the_same_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_operator.config import load_config
    from gpu_operator.render.stack import stack_objects

    objects = len(stack_objects(load_config(None)))
    phrase = f"{objects} Kubernetes objects and 1 Helm chart"
    assert main(["render", "-o", str(tmp_path / "out"), "--summary"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {objects} Kubernetes objects to" in out
    assert len(list((tmp_path / "out").glob("*.yaml"))) == objects
    assert f"{phrase}; " in out
    assert main(["check"]) == 0
    assert capsys.readouterr().out.startswith(f"{phrase}: no violations")
    assert main(["check", "--output", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["objects"], report["charts"]) == (objects, 1)


# --- item 14: whose program runs, and how each pool allocates GPUs --------------------------------------------------

RUNS_CASES = [
    ({}, "nvidia: no agents image configured"),
    ({"agents": {"implementation": "nvidia"}}, "nvidia: implementation nvidia (agents.implementation)"),
    ({"agents": {"overrides": {"gfd": "nvidia"}}}, "nvidia: override (agents.overrides.gfd)"),
    ({"agents": {"image": {"repository": "registry.example.com/agents", "tag": "1.0"}}}, "agents: agents.image"),
]


@pytest.mark.parametrize(("document", "expected"), RUNS_CASES)
def test_the_runs_column_says_the_users_choice(document: dict[str, Any], expected: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "--summary", "-f", _write(tmp_path, document)]) == 0
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("gpu-feature-discovery ")]
    assert expected in row


def test_the_pools_table_says_how_each_pool_allocates_gpus(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    document = {"aks": AKS, "operator": {"driver": {"version": "580.95.05"}}, "network": {"enabled": False},
                "pools": [{"name": "h100dra", "vmSize": "Standard_ND96isr_H100_v5", "gpuAllocation": "dra"},
                          T4_POOL]}
    assert main(["render", "--summary", "-f", _write(tmp_path, document)]) == 0
    lines = capsys.readouterr().out.splitlines()
    [header] = [line for line in lines if line.startswith("POOL ")]
    column = header.index("GPUS ALLOCATED BY")
    rows = {line.split()[0]: line[column:].split("  ")[0] for line in lines[lines.index(header) + 1:] if line}
    assert rows == {"h100dra": "DRA", "t4": "device plugin"}


# --- settings of components that are not deployed are named, not dropped ------------------------------------------

UNUSED = {"network": {"ofedDriver": {"env": [{"name": "A", "value": "b"}]}}, "dra": {"namespaces": {"ml": "existing"}},
          "operator": {"driver": {"upgradePolicy": {"drain": {"enable": True}}}}}


@pytest.mark.parametrize("command", ["render", "check"])
def test_render_and_check_say_which_settings_have_no_effect(command: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "-f", _write(tmp_path, UNUSED)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "no effect" in line]
    assert [note.split(" has no effect")[0] for note in notes] == [
        "note: operator.driver.upgradePolicy.drain", "note: network.ofedDriver", "note: dra.namespaces"]


def test_a_document_whose_settings_all_apply_gets_no_such_note(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-f", _write(tmp_path, {"aks": AKS, "pools": [IB_POOL]})]) == 0
    assert "no effect" not in capsys.readouterr().err
