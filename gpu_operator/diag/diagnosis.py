"""A diagnosis: every check run over one snapshot, the verdict per layer, and the exit status.

Pure: the same snapshot always gives the same diagnosis. The checks live in :mod:`~gpu_operator.diag.operands`
(pods, DaemonSets, placement, validations), :mod:`~gpu_operator.diag.nodes` (labels and resources the nodes
report), :mod:`~gpu_operator.diag.remediation` and :mod:`~gpu_operator.diag.rollout` (what the controller's GPU
fault remediation and staged driver rollout are doing) and :mod:`~gpu_operator.diag.workloads` (GPU pods that
cannot run, the sharing config).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_operator.diag.findings import (
    Finding,
    Layer,
    LayerVerdict,
    Severity,
    exit_status,
    first_broken,
    layer_verdicts,
)
from gpu_operator.diag.remediation import remediation_findings
from gpu_operator.diag.rollout import rollout_findings
from gpu_operator.diag.nodes import (
    Thresholds,
    allocatable_findings,
    detection_findings,
    mig_findings,
    network_findings,
    upgrade_findings,
)
from gpu_operator.diag.operands import (
    daemonset_findings,
    deployed_layers,
    operand_pod_findings,
    placement_findings,
    validations,
)
from gpu_operator.diag.snapshot import Snapshot, labels, name
from gpu_operator.diag.workloads import pending_pod_findings, sharing_findings
from gpu_operator.readiness.mofed import IB_NODE_LABEL

__all__ = ["Diagnosis", "diagnose"]


@dataclass(frozen=True)
class Diagnosis:
    namespace: str
    findings: tuple[Finding, ...]
    verdicts: tuple[LayerVerdict, ...]
    validations: dict[str, dict[str, str]]
    nodes: int
    gpu_nodes: int
    notes: tuple[str, ...]

    @property
    def first_broken(self) -> Layer | None:
        return first_broken(self.verdicts)

    @property
    def exit_status(self) -> int:
        return exit_status(self.findings)


def _policy_findings(snapshot: Snapshot) -> list[Finding]:
    policy = snapshot.cluster_policy
    if policy is None:
        return []
    state = (policy.get("status") or {}).get("state")
    if state in (None, "ready"):
        return []
    return [Finding("clusterpolicy-not-ready", Layer.OPERATOR, Severity.WARNING, f"clusterpolicy/{name(policy)}",
                    f"the ClusterPolicy reports state {state} (an operand it manages is not ready)",
                    f"kubectl get clusterpolicy {name(policy)} -o jsonpath='{{.status}}'")]


def diagnose(snapshot: Snapshot, thresholds: Thresholds | None = None) -> Diagnosis:
    limits = thresholds or Thresholds()
    findings = [
        *_policy_findings(snapshot),
        *detection_findings(snapshot),
        *operand_pod_findings(snapshot, limits.init),
        *daemonset_findings(snapshot),
        *placement_findings(snapshot),
        *allocatable_findings(snapshot),
        *mig_findings(snapshot, limits),
        *upgrade_findings(snapshot, limits),
        *rollout_findings(snapshot),
        *remediation_findings(snapshot),
        *sharing_findings(snapshot),
        *pending_pod_findings(snapshot),
        *network_findings(snapshot),
    ]
    deployed = deployed_layers(snapshot)
    if snapshot.nic_cluster_policy is not None or any(labels(n).get(IB_NODE_LABEL) == "true" for n in snapshot.nodes):
        deployed.add(Layer.NETWORK)
    gpu = sum(labels(n).get("nvidia.com/gpu.present") == "true" for n in snapshot.nodes)
    return Diagnosis(snapshot.namespace, tuple(findings), tuple(layer_verdicts(findings, deployed)),
                     validations(snapshot), len(snapshot.nodes), gpu, tuple(snapshot.notes))
