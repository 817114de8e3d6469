"""`gpu-operator check` sees what the CrossGuard pack sees, and NVIDIA's own recommended setups pass it.

Under `pulumi preview --policy-pack` the pack judges every object a `helm.v4.Chart` renders (each is its own
resource), so `check` renders the stack's charts too (gpu_operator/policy/charts.py, `helm template` as the
Kubernetes provider renders them). The table: every example config, the chart defaults (the built-in default
stack), a DRA stack with GPUs and ComputeDomains and a GpuConfig sharing claim, and an RDMA stack with each
device-plugin selector form the Network Operator's webhook accepts (Mellanox/network-operator v26.4.1
webhook-schemas: the shared plugin's `devices` or `selectors` with one of vendors / deviceIDs / drivers / ifNames /
linkTypes; SR-IOV selectors by `devices`, `pfNames`, `linkTypes` + `isRdma`). None may give a mandatory finding.
Before, the DRA stack's kubelet plugin (privileged by design: dra-driver-nvidia-gpu 0.4.1
templates/kubeletplugin.yaml) blocked the pack while `check` passed, and the webhook's forms failed
`rdma-plugin-selects-devices`.

The charts come from the shared reference copies (`chart: {path: ...}`), rendered by the Helm CLI: `$HELM`, `helm`
on PATH, or the one the e2e tools build (`make e2e-tools`); without any, the chart tests skip saying so.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.config import parse_config
from gpu_operator.policy import Enforcement, PolicyContext, check
from gpu_operator.render import render_operands
from gpu_operator.render.stack import stack_objects
from tests.support.reference import REFERENCE_CHARTS, REPO_ROOT

CHARTS = {"nfd": "node-feature-discovery-0.19.0.tgz", "network": "network-operator-26.4.1.tgz",
          "dra": "dra-driver-nvidia-gpu-0.4.1.tgz"}


def _helm() -> str | None:
    found = os.environ.get("HELM") or shutil.which("helm")
    if found:
        return found
    try:
        folder = subprocess.run([str(REPO_ROOT / "tools" / "e2e" / "build.sh"), "--bin-dir"], capture_output=True,
                                text=True, timeout=30, check=False).stdout.strip()
    except OSError:
        return None
    return str(Path(folder) / "helm") if folder and (Path(folder) / "helm").is_file() else None


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> str:
    found = _helm()
    if found is None:
        pytest.skip("no Helm CLI to render the charts (HELM, helm on PATH, or `make e2e-tools`)")
    if not all((REFERENCE_CHARTS / name).is_file() for name in CHARTS.values()):
        pytest.skip(f"the reference charts are not available in {REFERENCE_CHARTS}")
    return found


def _local_charts(document: dict[str, Any]) -> dict[str, Any]:
    """The document with each chart section pointing at the shared reference copy (no registry needed)."""
    document = copy.deepcopy(document)
    for section, name in CHARTS.items():
        if document.get(section) is None:
            document[section] = {}
        document[section]["chart"] = {"path": str(REFERENCE_CHARTS / name)}
    return document


def _examples() -> dict[str, dict[str, Any]]:
    return {path.stem: yaml.safe_load(path.read_text()) or {}
            for path in sorted((REPO_ROOT / "examples" / "configs").glob("*.yaml"))}


DRA_STACK = {
    "aks": {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34.2"},
    "pools": [{"name": "h100dra", "vmSize": "Standard_ND96isr_H100_v5", "gpuAllocation": "dra"}],
    "operator": {"driver": {"version": "580.95.05"}},
    "dra": {"computeDomains": True, "namespaces": {"ml": "existing"},
            "values": {"featureGates": {"TimeSlicingSettings": True}},
            "claimTemplates": [{"name": "shared-h100", "namespace": "ml", "spec": {"devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
                "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {
                    "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
                    "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}}}}]}}}]},
}
#: An InfiniBand pool with the Network Operator (its chart's NFD instead of ours).
RDMA_STACK = {
    "aks": {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34", "registerInfinibandFeature": True},
    "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}],
    "network": {"enabled": True, "vfDeviceIds": ["101e"]},
    "nfd": {"enabled": False},
}
TABLE = {**_examples(), "chart defaults": {}, "dra stack": DRA_STACK, "rdma stack": RDMA_STACK}


def _run_check(document: dict[str, Any], folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(document))
    status = main(["check", "-f", str(path), "--output", "json"])
    captured = capsys.readouterr()
    assert "helm template failed" not in captured.err and "no Helm CLI" not in captured.err, captured.err
    return status, json.loads(captured.out)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_check_finds_no_mandatory_violation_in_nvidias_recommended_setups(
        name: str, helm: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HELM", helm)
    status, report = _run_check(_local_charts(TABLE[name]), tmp_path, capsys)
    mandatory = [v for v in report["violations"] if v["enforcement"] == "mandatory"]
    assert mandatory == [] and status == 0, mandatory


def test_check_judges_the_objects_a_chart_renders(helm: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """What the pack blocks in a chart's objects, check blocks: a privileged container the DRA chart renders
    through its values (the controller is no GPU operand) fails both."""
    monkeypatch.setenv("HELM", helm)
    document = copy.deepcopy(DRA_STACK)
    document["dra"]["values"]["controller"] = {"containers": {"computeDomain": {
        "securityContext": {"privileged": True}}}}
    status, report = _run_check(_local_charts(document), tmp_path, capsys)
    flagged = [v for v in report["violations"] if v["policy"] == "privileged-only-gpu-operands"]
    assert status == 3 and [v["resource"] for v in flagged] == [
        "Deployment dra-driver-nvidia-gpu/dra-driver-nvidia-gpu-controller"], report["violations"]


#: The plugin configs of an RDMA stack, one per selector form the webhook accepts.
RDMA_FORMS = {
    "shared devices": {"rdmaSharedDevicePlugin": {"configList": [
        {"resourceName": "rdma_shared_device_a", "rdmaHcaMax": 63, "devices": ["ibp24s0"]}]}},
    "shared linkTypes": {"rdmaSharedDevicePlugin": {"configList": [
        {"resourceName": "shared_ib", "rdmaHcaMax": 63, "selectors": {"linkTypes": ["infiniband"]}}]}},
    "shared vendors": {"rdmaSharedDevicePlugin": {"configList": [
        {"resourceName": "shared_ib", "rdmaHcaMax": 63, "selectors": {"vendors": ["15b3"], "deviceIDs": ["101e"]}}]}},
    "sriov devices": {"sriovDevicePlugin": {"resourceList": [
        {"resourcePrefix": "rdma", "resourceName": "ib", "selectors": [{"devices": ["101e"]}]}]}},
    "sriov pfNames": {"sriovDevicePlugin": {"resourceList": [
        {"resourcePrefix": "rdma", "resourceName": "ib", "selectors": [{"pfNames": ["ibp24s0#0-7"]}]}]}},
    "sriov isRdma": {"sriovDevicePlugin": {"resourceList": [
        {"resourcePrefix": "rdma", "resourceName": "ib", "selectors": [{"isRdma": True, "linkTypes": ["infiniband"]}]}]}},
}


@pytest.mark.parametrize("form", sorted(RDMA_FORMS))
def test_an_rdma_stack_passes_with_each_selector_form_the_webhook_accepts(form: str) -> None:
    config = parse_config(RDMA_STACK)
    objects = stack_objects(config, render_operands(config))
    [policy] = [o for o in objects if o.get("kind") == "NicClusterPolicy"]
    for plugin, plugin_config in RDMA_FORMS[form].items():
        policy["spec"].setdefault(plugin, {})["config"] = json.dumps(plugin_config)
    mandatory = [f for f in check(objects, PolicyContext.from_config(config))
                 if f.policy.enforcement is Enforcement.MANDATORY]
    assert mandatory == []
