"""`gpu-operator render` with AKS GPU pools: ARM JSON under azure/, the pool summary, manifests untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.config import load_config
from gpu_operator.render import render
from gpu_operator.render.aks import agent_pool_resources
from gpu_operator.render.monitoring import monitoring_objects
from gpu_operator.render.network import network_objects

CREATED = """
aks: {resourceGroup: rg-gpu-dev, clusterName: aks-gpu-dev, create: true, location: westeurope,
      kubernetesVersion: "1.34"}
pools:
  - {name: t4, vmSize: Standard_NC4as_T4_v3, autoscale: {minCount: 0, maxCount: 2}}
"""


def test_default_stack_writes_its_pool_as_arm_json(tmp_path: Path) -> None:
    assert main(["render", "-o", str(tmp_path)]) == 0
    files = sorted(p.name for p in (tmp_path / "azure").iterdir())
    assert files == ["agentpool-h100.json"]
    document = json.loads((tmp_path / "azure" / "agentpool-h100.json").read_text())
    assert document == agent_pool_resources(load_config(None))[0]
    assert document["properties"]["gpuProfile"] == {"driver": "None"}
    manifests = sorted(p.name for p in tmp_path.glob("*.yaml"))
    config = load_config(None)
    assert len(manifests) == len(network_objects(config)) + len(render(config)) + len(monitoring_objects(config))


def test_a_created_cluster_is_written_too_and_stale_documents_go(tmp_path: Path) -> None:
    config = tmp_path / "dev.yaml"
    config.write_text(CREATED)
    out = tmp_path / "out"
    (out / "azure").mkdir(parents=True)
    (out / "azure" / "agentpool-old.json").write_text("{}")
    (out / "azure" / "notes.json").write_text("{}")
    assert main(["render", "-f", str(config), "-o", str(out)]) == 0
    assert sorted(p.name for p in (out / "azure").iterdir()) == [
        "agentpool-t4.json", "managedcluster-aks-gpu-dev.json", "notes.json",
    ]
    cluster = json.loads((out / "azure" / "managedcluster-aks-gpu-dev.json").read_text())
    assert cluster["properties"]["oidcIssuerProfile"] == {"enabled": True}


def test_no_azure_directory_without_pools(tmp_path: Path) -> None:
    assert main(["render", "-f", "examples/configs/time-slicing.yaml", "-o", str(tmp_path)]) == 0
    assert not (tmp_path / "azure").exists()


def test_stdout_carries_only_kubernetes_manifests(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render"]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert all("apiVersion" in d and "kind" in d and not d["kind"].startswith("Microsoft.") for d in documents)


def test_summary_lists_the_pools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-o", str(tmp_path), "--summary"]) == 0
    output = capsys.readouterr().out
    assert "GPU pools in AKS cluster rg-gpu/aks-gpu (existing):" in output
    assert "POOL  VM SIZE" in output
    row = next(line for line in output.splitlines() if line.startswith("h100 "))
    for cell in ("Standard_ND96isr_H100_v5", "8x H100-SXM5-80GB 80GiB", "GPU operator", "8x 400 Gb/s",
                 "all-disabled", "sku=gpu:NoSchedule"):
        assert cell in row
    assert "wrote 1 AKS resource to" in output


def test_pool_problems_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("aks: {resourceGroup: rg, clusterName: c, kubernetesVersion: '1.34'}\n"
                   "pools: [{name: t4, vmSize: Standard_NC4as_T4_v3, migConfig: all-1g.5gb}]\n")
    assert main(["render", "-f", str(bad)]) == 2
    assert "pools[0].migConfig" in capsys.readouterr().err
