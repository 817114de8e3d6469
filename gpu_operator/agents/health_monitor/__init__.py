"""The GPU health monitor: detection on the node, level-triggered, and the node-local half of remediation.

A node agent (`gpu-operator-agent health-monitor`, one pod per GPU node) turns what NVML says into Node
conditions and Events, one condition per fault class of the fault catalog (:mod:`gpu_operator.faults`), as
Kubernetes' node problem detector writes its own, and resets GPUs or reboots the node when the remediation
controller asks through the Node's annotations. The Node is its only datastore.

* :mod:`.findings`, :mod:`.readings`, :mod:`.bootstrap`: what counts as a fault (XIDs by the catalog, health
  readings by DCGM's checks, nothing while the driver starts);
* :mod:`.book`, :mod:`.conditions`, :mod:`.publisher`, :mod:`.events`, :mod:`.ratelimit`: what is held, and
  writing it idempotently, batched and rate-limited;
* :mod:`.requests`, :mod:`.actions`, :mod:`.host_actions`, :mod:`.host_server`: the controller's requests, and
  the privileged helper that alone touches the host;
* :mod:`.monitor`, :mod:`.node_view`, :mod:`.settings`, :mod:`.command`: the agent itself.
"""

from gpu_operator.agents.health_monitor.monitor import BOOT_ANNOTATION, HealthMonitor
from gpu_operator.agents.health_monitor.requests import REBOOT_REQUEST, REBOOT_RESULT, RESET_REQUEST, RESET_RESULT
from gpu_operator.agents.health_monitor.settings import Settings

__all__ = [
    "BOOT_ANNOTATION",
    "REBOOT_REQUEST",
    "REBOOT_RESULT",
    "RESET_REQUEST",
    "RESET_RESULT",
    "HealthMonitor",
    "Settings",
]
