"""`diag`'s view of GPU fault remediation: each node the remediation holds, its fault, its stage, the next step.

What a node is going through is on the Node itself (the remediation's only datastore,
:mod:`gpu_operator.remediation.vocabulary`): the state label, the fault and stage annotations. The controller's
status ConfigMap (`gpu-operator-status`, key `remediation`) adds the next step it planned, where it has written
one. A node handed to a person (`needs-human`) breaks the driver layer on that node (its GPU is out of service
until someone acts); a node being repaired or held back by a breaker degrades it; one only observed is worth
knowing. A GPU fault condition on a node the remediation has not taken (observe mode, or no controller) is said
too, so a broken GPU is never silent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from gpu_operator.diag.findings import Finding, Layer, Severity
from gpu_operator.diag.operands import gpu_nodes
from gpu_operator.diag.snapshot import Obj, Snapshot, labels, name
from gpu_operator.faults import FAULT_CLASSES
from gpu_operator.remediation import FAULT_ANNOTATION, STAGE_ANNOTATION, STATE_LABEL, parse_fault, parse_stage
from gpu_operator.render.operands.operator_controller import STATUS_CONFIG_MAP

__all__ = ["remediation_findings"]

#: The Node conditions the health monitor writes, one per fault class that quarantines or is worth a condition.
FAULT_CONDITIONS = frozenset(c.condition for c in FAULT_CLASSES.values() if c.condition)
_SEVERITY = {"needs-human": Severity.ERROR, "observing": Severity.INFO}


def _next_steps(snapshot: Snapshot) -> Mapping[str, Mapping[str, Any]]:
    status = snapshot.config_map(STATUS_CONFIG_MAP)
    text = ((status or {}).get("data") or {}).get("remediation") or "{}"
    try:
        steps = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return steps if isinstance(steps, dict) else {}


def _fault_text(node: Obj) -> str:
    record = parse_fault((node.get("metadata") or {}).get("annotations", {}).get(FAULT_ANNOTATION)).value
    if record is None:
        return "a GPU fault"
    gpus = ", ".join(f"{g.uuid} ({g.pci})" if g.pci else g.uuid for g in record.gpus) or "the node"
    return f"{record.fault_class} ({record.reason}) on {gpus}"


def _faulty_conditions(node: Obj) -> list[str]:
    conditions = (node.get("status") or {}).get("conditions") or ()
    return [f"{c.get('type')} ({c.get('reason')}): {c.get('message')}" for c in conditions
            if c.get("type") in FAULT_CONDITIONS and c.get("status") == "True"]


def remediation_findings(snapshot: Snapshot) -> list[Finding]:
    steps = _next_steps(snapshot)
    findings = []
    for node in gpu_nodes(snapshot):
        node_name, state = name(node), labels(node).get(STATE_LABEL, "")
        describe = (f"kubectl describe node {node_name}; kubectl get configmap {STATUS_CONFIG_MAP} -n "
                    f"{snapshot.namespace} -o jsonpath='{{.data.remediation}}'")
        if not state:
            faulty = _faulty_conditions(node)
            if faulty:
                findings.append(Finding(
                    "gpu-fault-unremediated", Layer.DRIVER, Severity.WARNING, f"node/{node_name}",
                    f"a GPU fault holds and nothing remediates it (remediation in observe mode, or no controller): "
                    f"{'; '.join(faulty)}", describe))
            continue
        stage = parse_stage((node.get("metadata") or {}).get("annotations", {}).get(STAGE_ANNOTATION)).value
        planned = steps.get(node_name) or {}
        words = [f"{_fault_text(node)}: {state}"]
        if stage is not None and stage.action and stage.action not in (state,):
            words.append(f"rung {stage.action}" + (f" (attempt {stage.attempt})" if stage.attempt else ""))
        if stage is not None and stage.reason:
            words.append(stage.reason)
        if planned.get("next"):
            words.append(f"next: {planned['next']}")
        findings.append(Finding("gpu-remediation", Layer.DRIVER, _SEVERITY.get(state, Severity.WARNING),
                                f"node/{node_name}", "; ".join(words), describe))
    return findings
