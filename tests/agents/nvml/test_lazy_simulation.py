"""A real node never loads the simulated NVML (its profiles and pydantic): it costs the exporter ~11 MiB."""

from __future__ import annotations

import subprocess
import sys

CHECK = (
    "import sys, {module}\n"
    "loaded = sorted(m for m in sys.modules if m.startswith(('pydantic', 'gpu_operator.agents.nvml.simulated')))\n"
    "print(','.join(loaded))\n"
)


def test_the_metrics_exporter_imports_no_simulation_until_asked() -> None:
    module = "gpu_operator.agents.metrics_exporter.command"
    result = subprocess.run([sys.executable, "-c", CHECK.format(module=module)], capture_output=True, text=True,
                            check=True, timeout=60)
    assert result.stdout.strip() == ""
