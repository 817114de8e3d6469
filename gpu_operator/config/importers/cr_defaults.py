"""What NVIDIA's operator assumes for a ClusterPolicy field that is absent, where that differs from the chart.

Our model defaults are the Helm chart's values. A field left out of a ClusterPolicy (a hand-written CR, or a field
the chart's template omits because its value is empty) gets the operator's own default instead, and for these
fields the two disagree (`IsEnabled()` and CRD defaults in `api/nvidia/v1/clusterpolicy_types.go`;
reference/gpu-operator.md §2 "CR default" and §7).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterator, Mapping

from gpu_operator.config.importers.paths import has_path

__all__ = ["CR_DEFAULTS", "absent_defaults"]

#: Document path → the operator's value when the ClusterPolicy field is absent.
CR_DEFAULTS: dict[str, Any] = {
    # standalone DCGM: the chart turns it off, the operator turns an unset switch on
    "operator.dcgm.enabled": True,
    # an empty strategy sets no MIG_STRATEGY, and the device plugin and GFD then default to none
    "operator.mig.strategy": "none",
    # sandbox operands are off unless switched on in the CR
    "operator.vgpuDeviceManager.enabled": False,
    "operator.vfioManager.enabled": False,
    "operator.sandboxDevicePlugin.enabled": False,
    "operator.kataSandboxDevicePlugin.enabled": False,
    "operator.ccManager.enabled": False,
    # CRD default false; the chart sets true
    "operator.driver.upgradePolicy.autoUpgrade": False,
    # an unset ServiceMonitor switch means no ServiceMonitor
    "operator.dcgmExporter.serviceMonitor.enabled": False,
    # IsNLSEnabled() is false when unset; the chart sets true
    "operator.driver.licensingConfig.nlsEnabled": False,
}


def absent_defaults(present: Mapping[str, Any], under: str = "operator") -> Iterator[tuple[str, Any]]:
    """The CR defaults, below `under`, for the fields that `present` (a document) leaves out."""
    prefix = f"{under}."
    for path, value in CR_DEFAULTS.items():
        if (path == under or path.startswith(prefix)) and not has_path(present, path):
            yield path, value
