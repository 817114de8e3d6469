"""Where a setting went when a GPU Operator chart dropped its values key, and what an umbrella chart's file is.

A values file written for an older chart (v1.x to v25.x) may hold keys the v26.7.0 chart no longer has. Telling
the user to "check the spelling" of `gfd.migStrategy` or `driver.tolerations` sends them looking for a typo; the
hint names where the setting lives now. Keys were read from the charts' own `values.yaml` between v1.7 and
v26.7.0:

* v1.8 moved the per-operand scheduling keys (`tolerations`, `nodeSelector`, `affinity`, `priorityClassName`,
  `podSecurityContext`) to `daemonsets` and to NVIDIA's `nvidia.com/gpu.deploy.<operand>` node labels, and v1.11
  dropped the per-operand `securityContext`; GFD's `migStrategy` became `mig.strategy`;
* `driver.use_ocp_driver_toolkit` became `operator.use_ocp_driver_toolkit`, and `driver.repoConfig.destinationDir`
  was dropped (the driver container knows where its package manager looks).

A values file for a parent chart that has the GPU Operator as a dependency nests its values under `gpu-operator:`
(its `global:` section, shared by all subcharts, is read for what the NFD subchart takes from it); the subtree
is what this importer reads.
"""

from __future__ import annotations

__all__ = ["removed_key_hint", "UMBRELLA_KEY", "umbrella_hint"]

#: The key a parent chart nests the GPU Operator's values under (the dependency's name).
UMBRELLA_KEY = "gpu-operator"

#: Operand sections of the chart that had per-operand scheduling keys before v1.8.
_OPERANDS = (
    "driver", "toolkit", "devicePlugin", "dcgm", "dcgmExporter", "gfd", "migManager", "nodeStatusExporter",
    "validator", "gds", "gdrcopy", "vgpuManager", "vgpuDeviceManager", "vfioManager", "sandboxDevicePlugin",
    "kataSandboxDevicePlugin", "ccManager",
)

#: Leaf name under any operand → where that setting lives now.
_PER_OPERAND: dict[str, str] = {
    "tolerations": "per-operand tolerations were removed from the chart in v1.8: set daemonsets.tolerations, which "
                   "every operand gets (GPU pool taints are added to it for you)",
    "nodeSelector": "per-operand node selectors were removed from the chart in v1.8: operands run on GPU nodes "
                    "(nvidia.com/gpu.present=true); keep one off a node with the label "
                    "nvidia.com/gpu.deploy.<operand>=false",
    "affinity": "per-operand affinity was removed from the chart in v1.8: operands run on GPU nodes "
                "(nvidia.com/gpu.present=true); keep one off a node with the label "
                "nvidia.com/gpu.deploy.<operand>=false",
    "priorityClassName": "moved to daemonsets.priorityClassName in v1.8 (one priority class for every operand)",
    "podSecurityContext": "moved to daemonsets.podSecurityContext in v1.8 (one pod security context for every "
                          "operand)",
    "securityContext": "removed from the chart in v1.11: each operand runs with the container security context "
                       "NVIDIA's assets give it",
    "migStrategy": "moved to mig.strategy (one MIG strategy for the device plugin and GPU feature discovery)",
}

#: Whole keys that moved elsewhere.
_MOVED: dict[str, str] = {
    "driver.use_ocp_driver_toolkit": "moved to operator.use_ocp_driver_toolkit (OpenShift only, not supported here)",
    "driver.repoConfig.destinationDir": "removed from the chart in v1.8: the repository files are mounted where the "
                                        "node OS's package manager reads them; keep driver.repoConfig.configMapName",
}


def removed_key_hint(key: str) -> str | None:
    """Where a values key that the v26.7.0 chart does not have went, or None when it never existed."""
    for moved, hint in _MOVED.items():
        if key == moved or key.startswith(f"{moved}."):
            return hint
    section, _, rest = key.partition(".")
    leaf = rest.split(".", 1)[0]
    if section in _OPERANDS and leaf in _PER_OPERAND:
        return _PER_OPERAND[leaf].replace("<operand>", _deploy_label(section))
    return None


def _deploy_label(section: str) -> str:
    """NVIDIA's `nvidia.com/gpu.deploy.<name>` label for an operand section (device-plugin, dcgm-exporter, ...)."""
    names = {"gfd": "gpu-feature-discovery", "toolkit": "container-toolkit", "validator": "operator-validator"}
    return names.get(section, "".join(f"-{c.lower()}" if c.isupper() else c for c in section))


def umbrella_hint(key: str) -> str | None:
    """A hint for a top-level key that belongs to a parent chart's values file."""
    if key == UMBRELLA_KEY:
        return (
            "these are a parent chart's values: import the gpu-operator subtree alone (for example "
            "`yq '.\"gpu-operator\"' values.yaml > gpu-operator-values.yaml`)"
        )
    return None
