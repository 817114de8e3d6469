"""The gpu-check report: one JSON file for machines and one Markdown page for people, from the step results.

`write_report(results, directory, machine)` writes `gpu-check.json` and `gpu-check.md` and returns the page's
path. The verdict is "passed" when no step failed (a step may be skipped, e.g. the CDI comparison without
nvidia-ctk); the machine description (GPUs, driver, Python, when) heads both files.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from tests.gpu.steps import FAILED, PASSED, StepResult

__all__ = ["JSON_NAME", "MARKDOWN_NAME", "machine_facts", "verdict", "write_report"]

JSON_NAME = "gpu-check.json"
MARKDOWN_NAME = "gpu-check.md"


def verdict(results: Sequence[StepResult]) -> str:
    return FAILED if not results or any(r.status == FAILED for r in results) else PASSED


def machine_facts(nvml: str) -> dict[str, str]:
    return {"host": platform.node(), "kernel": platform.release(), "python": sys.version.split()[0],
            "nvml": nvml, "when": datetime.now(UTC).isoformat(timespec="seconds")}


def _markdown(results: Sequence[StepResult], machine: Mapping[str, str]) -> str:
    lines = [f"# gpu-check: {verdict(results)}", ""]
    lines += [f"- {key}: {value}" for key, value in machine.items()]
    lines += ["", "| step | result | seconds | summary |", "|---|---|---|---|"]
    lines += [f"| {r.name} | {r.status} | {r.seconds:g} | {r.summary.replace('|', '/')} |" for r in results]
    for result in results:
        if result.details:
            lines += ["", f"## {result.name} ({result.status})", "", "```", *result.details, "```"]
    return "\n".join(lines) + "\n"


def write_report(results: Sequence[StepResult], directory: Path, machine: Mapping[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    document = {"verdict": verdict(results), "machine": dict(machine),
                "steps": [{"name": r.name, "status": r.status, "summary": r.summary, "details": list(r.details),
                           "seconds": r.seconds} for r in results]}
    (directory / JSON_NAME).write_text(json.dumps(document, indent=2) + "\n")
    page = directory / MARKDOWN_NAME
    page.write_text(_markdown(results, machine))
    return page
