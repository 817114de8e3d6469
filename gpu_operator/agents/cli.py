"""`gpu-operator-agent <name> [flags]`: one entry point for every node agent.

The first argument names the agent; the rest are that agent's own flags (NVIDIA's flags for the program it
replaces, plus `--nvml`). Each agent is a module with `main(argv) -> int`, imported only when chosen, so one
agent's dependencies never load in another's container.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

__all__ = ["AGENTS", "main"]

#: Agent name -> module providing `main(argv: Sequence[str]) -> int`.
AGENTS: dict[str, str] = {
    "config-manager": "gpu_operator.agents.device_plugin.config_manager",
    "device-plugin": "gpu_operator.agents.device_plugin.command",
    "driver-manager": "gpu_operator.agents.driver_manager.command",
    "feature-discovery": "gpu_operator.agents.feature_discovery.command",
    "health-monitor": "gpu_operator.agents.health_monitor.command",
    "mig-manager": "gpu_operator.agents.mig_manager.command",
    "metrics-exporter": "gpu_operator.agents.metrics_exporter.command",
    "node-status-exporter": "gpu_operator.agents.node_status_exporter.command",
    "operator": "gpu_operator.agents.controller.command",
    "validator": "gpu_operator.agents.validator.command",
}

_USAGE = "usage: gpu-operator-agent <agent> [flags]\nagents: {}\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to the named agent; returns its exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or arguments[0] in ("-h", "--help"):
        sys.stderr.write(_USAGE.format(", ".join(sorted(AGENTS))))
        return 0 if arguments else 2
    name, rest = arguments[0], arguments[1:]
    module = AGENTS.get(name)
    if module is None:
        sys.stderr.write(f"gpu-operator-agent: unknown agent {name!r}\n" + _USAGE.format(", ".join(sorted(AGENTS))))
        return 2
    return int(importlib.import_module(module).main(rest))


if __name__ == "__main__":
    sys.exit(main())
