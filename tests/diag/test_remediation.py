"""`diag` names each node the GPU fault remediation holds: its fault, its stage and the next step; a fault nothing
remediates is said too."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import yaml

from gpu_operator.diag.diagnosis import diagnose
from gpu_operator.diag.findings import Layer, Severity
from gpu_operator.diag.remediation import remediation_findings
from gpu_operator.diag.snapshot import Snapshot

NS = "gpu-operator"
FAULT = {"class": "fallen-off-bus", "condition": "GPUFallenOffBus", "reason": "XID79",
         "gpus": [{"uuid": "GPU-1", "pci": "0000:17:00.0"}], "since": 1795900000.0}


def _node(name: str, state: str = "", stage: dict[str, Any] | None = None, condition: bool = False) -> dict:
    labels = {"nvidia.com/gpu.present": "true"}
    annotations: dict[str, str] = {}
    if state:
        labels["nvidia.com/gpu-remediation.state"] = state
        annotations["nvidia.com/gpu-remediation.fault"] = json.dumps(FAULT)
    if stage:
        annotations["nvidia.com/gpu-remediation.stage"] = json.dumps(stage)
    conditions = [{"type": "GPUFallenOffBus", "status": "True" if condition else "False", "reason": "XID79",
                   "message": 'GPU-1 (0000:17:00.0): XID 79 "GPU has fallen off the bus"'}]
    return {"metadata": {"name": name, "labels": labels, "annotations": annotations},
            "status": {"conditions": conditions}}


def _snapshot(*nodes: dict, steps: dict | None = None) -> Snapshot:
    status = {"metadata": {"name": "gpu-operator-status", "namespace": NS},
              "data": {"remediation": yaml.safe_dump(steps or {})}}
    return Snapshot(NS, datetime.now(timezone.utc), nodes=nodes, config_maps=[status])


def test_each_held_node_is_named_with_its_fault_stage_and_next_step() -> None:
    snapshot = _snapshot(
        _node("n-human", "needs-human", {"action": "needs-human", "started": 1.0,
                                         "reason": "reboot failed (timed out); the ladder hands it to a person"}),
        _node("n-boot", "rebooting", {"action": "reboot", "started": 1.0, "attempt": 1}),
        _node("n-held", "deferred"),
        _node("n-fine"),
        steps={"n-boot": {"next": "wait for the new bootID (reboot asked at 1)"}})
    findings = {f.subject: f for f in remediation_findings(snapshot)}
    assert set(findings) == {"node/n-human", "node/n-boot", "node/n-held"}
    human = findings["node/n-human"]
    assert human.severity is Severity.ERROR and human.layer is Layer.DRIVER
    assert "fallen-off-bus (XID79) on GPU-1 (0000:17:00.0): needs-human" in human.what
    assert "reboot failed (timed out)" in human.what
    boot = findings["node/n-boot"]
    assert boot.severity is Severity.WARNING
    assert "rung reboot (attempt 1)" in boot.what and "next: wait for the new bootID" in boot.what
    assert "kubectl describe node n-boot" in boot.next


def test_a_fault_nothing_remediates_is_said() -> None:
    findings = remediation_findings(_snapshot(_node("n-observed", condition=True)))
    assert [(f.check, f.severity) for f in findings] == [("gpu-fault-unremediated", Severity.WARNING)]
    assert "GPUFallenOffBus (XID79)" in findings[0].what


def test_a_garbled_annotation_or_status_is_no_crash() -> None:
    node = _node("n-odd", "draining")
    node["metadata"]["annotations"]["nvidia.com/gpu-remediation.fault"] = "{not json"
    snapshot = Snapshot(NS, datetime.now(timezone.utc), nodes=[node],
                        config_maps=[{"metadata": {"name": "gpu-operator-status"}, "data": {"remediation": ": ["}}])
    [finding] = remediation_findings(snapshot)
    assert finding.what.startswith("a GPU fault: draining")
    assert any(f.check == "gpu-remediation" for f in diagnose(snapshot).findings)
