"""`python -m tests.gpu [--output DIR] [--nvml auto] [--skip STEP ...]`: run the gpu-check and write its report.

Exit status 0 when no step failed, 1 otherwise; on a machine without an NVIDIA driver the first line on stderr
says "no NVIDIA driver: ..." and why. `make gpu-check` runs this.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.gpu.report import machine_facts, verdict, write_report
from tests.gpu.steps import FAILED, STEPS, CheckContext, run_steps

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.gpu", description="the agents against the real driver")
    parser.add_argument("--output", default="gpu-check", help="the report's directory (default: gpu-check)")
    parser.add_argument("--nvml", default="auto", help="the agents' NVML: auto (the driver) or fake:<profile>")
    parser.add_argument("--skip", action="append", default=[], choices=[name for name, _ in STEPS],
                        help="a step not to run (repeatable)")
    arguments = parser.parse_args(argv)
    output = Path(arguments.output)
    results = run_steps(CheckContext(work_dir=output / "work", nvml=arguments.nvml), skip=arguments.skip)
    page = write_report(results, output, machine_facts(arguments.nvml))
    if results[0].status == FAILED:
        print(results[0].summary, file=sys.stderr)
    for result in results:
        print(f"{result.status:>7}  {result.name}: {result.summary}")
    print(f"gpu-check {verdict(results)}; report: {page}")
    return 0 if verdict(results) != FAILED else 1


if __name__ == "__main__":
    sys.exit(main())
