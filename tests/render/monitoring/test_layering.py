"""Rendering the monitoring objects imports neither Pulumi nor the node agents (NVML, gRPC)."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import sys
from gpu_operator.config import parse_config
from gpu_operator.render.monitoring import monitoring_objects
assert monitoring_objects(parse_config({"cluster": {"prometheusOperator": True}}))
print(",".join(sorted(m for m in sys.modules if m.split(".")[0] in {"pulumi", "pynvml", "grpc"}
                      or m.startswith("gpu_operator.agents"))))
"""


def test_monitoring_render_stays_on_the_render_side() -> None:
    result = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
