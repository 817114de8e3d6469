"""Every Helm value the importer keeps changes what is rendered, or is reported as having no effect.

The walk covers the importer's whole rule table (:data:`HELM_RULES`): for each key that is copied or translated,
a non-default value is set (on top of the values that make its operand render at all, such as `dcgm.enabled`
for the DCGM image), the file is imported and rendered, and the objects (plus the NFD chart's values) must differ
from the render without that key. A key that is refused is checked for its error instead; a key whose value is
accepted but changes nothing must be among the notes `ignored_helm_values` gives the user. So a mapping that
quietly stops reaching the render fails here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.importers import ignored_helm_values, import_helm_values
from gpu_operator.config.importers.helm_keys import HELM_RULES
from gpu_operator.config.importers.helm_rules import Copy, Handle
from gpu_operator.config.importers.paths import get_path, merge_over, set_path
from gpu_operator.render import render
from gpu_operator.render.nfd import nfd_chart

#: Values that make a key's operand render at all (longest matching key prefix wins).
_SANDBOX = {"sandboxWorkloads": {"enabled": True}}
_KATA = {"sandboxWorkloads": {"enabled": True, "mode": "kata"}}
_VGPU = {**_SANDBOX, "vgpuManager": {"enabled": True, "repository": "registry.example.com/nvidia", "version": "550.1"}}
CONTEXT: dict[str, dict[str, Any]] = {
    "dcgm": {"dcgm": {"enabled": True}},
    "gds": {"gds": {"enabled": True}},
    "gdrcopy": {"gdrcopy": {"enabled": True}},
    "nodeStatusExporter": {"nodeStatusExporter": {"enabled": True}},
    "sandboxWorkloads.defaultWorkload": _SANDBOX,
    "sandboxWorkloads.mode": _SANDBOX,
    "vfioManager": _SANDBOX,
    "vgpuDeviceManager": _SANDBOX,
    "sandboxDevicePlugin": _SANDBOX,
    "validator.vfioPCI": _SANDBOX,
    "validator.vgpuDevices": _SANDBOX,
    "validator.vgpuManager": _VGPU,
    "vgpuManager": _VGPU,
    "vgpuManager.enabled": {**_VGPU, "vgpuManager": {**_VGPU["vgpuManager"], "enabled": False}},
    "kataSandboxDevicePlugin": _KATA,
    "ccManager": _KATA,
    "driver.rdma.useHostMofed": {"driver": {"rdma": {"enabled": True}}},
    "dcgmExporter.podLabelAllowlistRegex": {"dcgmExporter": {"enablePodLabels": True}},
}

_IMAGE_PARTS: dict[str, Any] = {
    "repository": "mirror.example.com/nvidia",
    "image": "custom",
    "version": "v9.9.9",
    "imagePullPolicy": "Always",
    "imagePullSecrets": ["regcred"],
    "env": [{"name": "EXTRA", "value": "1"}],
    "args": ["--extra"],
    "resources": {"limits": {"memory": "1Gi"}},
    "hostNetwork": True,
}

#: A non-default value for every key whose value cannot be derived from its name.
VALUES: dict[str, Any] = {
    "ccManager.defaultMode": "off",
    "cdi.enabled": False,
    "cdi.nriPluginEnabled": True,
    "daemonsets.annotations": {"team": "ml"},
    "daemonsets.labels": {"team": "ml"},
    "daemonsets.priorityClassName": "gpu-critical",
    "daemonsets.rollingUpdate.maxUnavailable": "10%",
    "daemonsets.tolerations": [{"key": "sku", "operator": "Exists", "effect": "NoSchedule"}],
    "daemonsets.updateStrategy": "OnDelete",
    "dcgmExporter.annotations": {"team": "ml"},
    "dcgmExporter.config": {"name": "custom-metrics"},
    "dcgmExporter.hpcJobMapping": {"enabled": True, "directory": "/var/lib/slurm-jobs"},
    "dcgmExporter.podLabelAllowlistRegex": ["^app$"],
    "dcgmExporter.service": {"type": "NodePort"},
    "dcgmExporter.serviceMonitor": {"interval": "30s"},
    "devicePlugin.config": {"name": "plugin-config", "default": "any"},
    "devicePlugin.mps.root": "/var/run/mps",
    "driver.certConfig": {"name": "custom-certs"},
    "driver.kernelModuleConfig": {"name": "kernel-modules"},
    "driver.kernelModuleType": "open",
    "driver.licensingConfig": {"secretName": "nls-token"},
    "driver.livenessProbe": {"initialDelaySeconds": 5, "periodSeconds": 30},
    "driver.readinessProbe": {"initialDelaySeconds": 5, "periodSeconds": 30},
    "driver.repoConfig": {"configMapName": "repo-config"},
    "driver.secretEnv": "driver-secrets",
    "driver.startupProbe": {"initialDelaySeconds": 30},
    "driver.virtualTopology": {"config": "topology"},
    "driver.usePrecompiled": True,
    "driver.nvidiaDriverCRD.enabled": True,
    "hostPaths.driverInstallDir": "/opt/nvidia/driver",
    "hostPaths.kubeletRootDir": "/var/lib/k0s/kubelet",
    "hostPaths.rootFS": "/host",
    "mig.strategy": "mixed",
    "migManager.config": {"name": "custom-mig-config"},
    "migManager.gpuClientsConfig": {"name": "gpu-clients"},
    "driver.upgradePolicy": {"maxParallelUpgrades": 5, "gpuPodDeletion": {"timeoutSeconds": 60}},
    "global": {"imagePullSecrets": [{"name": "regcred"}]},
    "node-feature-discovery": {"worker": {"config": {"sources": {"pci": {"deviceLabelFields": ["vendor", "class"]}}}}},
    "operator.defaultRuntime": "crio",
    "operator.runtimeClass": "nvidia-custom",
    "operator.use_ocp_driver_toolkit": True,
    "sandboxWorkloads.defaultWorkload": "vm-passthrough",
    "sandboxWorkloads.mode": "kata",
    "toolkit.installDir": "/opt/nvidia",
    "vgpuDeviceManager.config": {"name": "vgpu-devices"},
    "vgpuManager.kernelModuleConfig": {"name": "kernel-modules"},
}

#: Keys whose non-default value this package refuses (with a fix), and words of that error.
REFUSED: dict[str, str] = {
    "driver.usePrecompiled": "kernel versions",
    "operator.use_ocp_driver_toolkit": "OpenShift",
    # the driver mounts each key of these ConfigMaps, and a values file cannot list them
    "driver.repoConfig": "a render cannot read the ConfigMap",
    "driver.certConfig": "a render cannot read the ConfigMap",
}

KEPT = sorted(key for key, rule in HELM_RULES.items() if isinstance(rule, (Copy, Handle)))


def _context(key: str) -> dict[str, Any]:
    matches = [prefix for prefix in CONTEXT if key == prefix or key.startswith(f"{prefix}.")]
    return CONTEXT[max(matches, key=len)] if matches else {}


def _value(key: str) -> Any:
    if key in VALUES:
        return VALUES[key]
    leaf = key.rsplit(".", 1)[-1]
    if leaf in _IMAGE_PARTS:
        return _IMAGE_PARTS[leaf]
    rule = HELM_RULES[key]
    if isinstance(rule, Copy):
        current = get_path(parse_config(import_helm_values(_context(key))).to_document(), rule.target)
        if isinstance(current, bool):
            return not current
    raise AssertionError(f"{key}: add a non-default value to VALUES")


def _rendered(values: dict[str, Any]) -> str:
    document = import_helm_values(values)
    # the test compares NVIDIA's images (our agents replace some of them only when the user opts in)
    document.setdefault("agents", {})["implementation"] = "nvidia"
    config = parse_config(document)
    chart = nfd_chart(config)
    return json.dumps([render(config), chart.values if chart else None], sort_keys=True, default=str)


def _noted(key: str, values: dict[str, Any]) -> bool:
    notes = ignored_helm_values(values)
    return any(key == noted or key.startswith(f"{noted}.") for noted in notes)


def test_every_kept_key_is_walked() -> None:
    assert len(KEPT) > 220
    assert all(isinstance(_value(key), object) for key in KEPT)


@pytest.mark.parametrize(
    "key",
    KEPT,
)
def test_a_kept_value_changes_the_render_or_is_reported(key: str) -> None:
    base = _context(key)
    changed: dict[str, Any] = {}
    set_path(changed, key, _value(key))
    changed = merge_over(base, changed)
    if key in REFUSED:
        with pytest.raises(ConfigError, match=REFUSED[key]):
            import_helm_values(changed)
        return
    if _noted(key, changed):
        return
    assert _rendered(changed) != _rendered(base), (
        f"{key}: the imported value changes nothing in the render and is not reported by ignored_helm_values"
    )
