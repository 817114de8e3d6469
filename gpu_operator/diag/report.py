"""The diagnosis for people (text) and for programs (`--output json`).

Text: one line per layer in chain order with its verdict, the first broken layer named, then the findings grouped
by layer (errors first), each with its object and the next command to run, and the validation files per node.
JSON: the same content as one object; `exitStatus` is the status the command exits with.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gpu_operator.diag.diagnosis import Diagnosis
from gpu_operator.diag.findings import Finding, Layer, Severity, Verdict

__all__ = ["text_report", "json_report"]

_MARK = {Verdict.OK: "ok", Verdict.DEGRADED: "DEGRADED", Verdict.BROKEN: "BROKEN", Verdict.NOT_DEPLOYED: "-"}
#: The layer whose validation writes each file: a file written `ready` says the layer passed when the validator
#: ran, not that it holds now.
_FILE_LAYERS = {"driver-ready": Layer.DRIVER, "toolkit-ready": Layer.TOOLKIT, "plugin-ready": Layer.DEVICE_PLUGIN}


def _about(finding: Finding, node: str) -> bool:
    return finding.subject == f"node/{node}" or re.search(rf"\bon {re.escape(node)}\b", finding.what) is not None


def _validation(diagnosis: Diagnosis, node: str, file: str, state: str) -> str:
    """`driver-ready ready`, and when an error of that layer names the node now, that the file is older news."""
    layer = _FILE_LAYERS.get(file)
    broken = state == "ready" and any(
        f.severity is Severity.ERROR and _about(f, node)
        for verdict in diagnosis.verdicts if verdict.layer is layer for f in verdict.findings)
    return f"{file} {state}" + (f" (when the validator ran; the {layer.value} layer fails on this node now, "
                                "see above)" if broken and layer is not None else "")


def text_report(diagnosis: Diagnosis) -> str:
    lines = [f"GPU stack in namespace {diagnosis.namespace}: {diagnosis.gpu_nodes} GPU node(s) of "
             f"{diagnosis.nodes} node(s) checked", ""]
    width = max(len(v.layer.value) for v in diagnosis.verdicts)
    for verdict in diagnosis.verdicts:
        counted = [f.severity.value for f in verdict.findings]
        detail = ", ".join(f"{counted.count(s)} {s}{'s' if counted.count(s) > 1 and s != 'info' else ''}"
                           for s in ("error", "warning", "info") if s in counted)
        lines.append((f"  {verdict.layer.value:<{width}}  {verdict.verdict.value:<12}"
                      + (f"  ({detail})" if detail else "")).rstrip())
    broken = diagnosis.first_broken
    lines += ["", f"first broken layer: {broken.value}" if broken is not None else "no broken layer"]
    for verdict in diagnosis.verdicts:
        if not verdict.findings:
            continue
        lines += ["", f"{verdict.layer.value} ({_MARK[verdict.verdict]}):"]
        for finding in verdict.findings:
            lines.append(f"  [{finding.severity.value}] {finding.subject}: {finding.what}")
            lines.append(f"      next: {finding.next}")
    if diagnosis.validations:
        lines += ["", "validations (/run/nvidia/validations, from the validator pods):"]
        for node, files in sorted(diagnosis.validations.items()):
            shown = ", ".join(_validation(diagnosis, node, file, state) for file, state in files.items())
            shown = shown or "no validation reported"
            lines.append(f"  {node}: {shown}")
    for note in diagnosis.notes:
        lines += ["", f"note: {note}"]
    return "\n".join(lines) + "\n"


def json_report(diagnosis: Diagnosis) -> str:
    broken = diagnosis.first_broken
    document: dict[str, Any] = {
        "namespace": diagnosis.namespace,
        "nodes": diagnosis.nodes,
        "gpuNodes": diagnosis.gpu_nodes,
        "layers": [{"layer": v.layer.value, "verdict": v.verdict.value} for v in diagnosis.verdicts],
        "firstBroken": broken.value if broken is not None else None,
        "findings": [f.to_json() for v in diagnosis.verdicts for f in v.findings],
        "validations": diagnosis.validations,
        "notes": list(diagnosis.notes),
        "exitStatus": diagnosis.exit_status,
    }
    return json.dumps(document, indent=2) + "\n"
