"""Every key of the GPU Operator v26.7.0 chart's values, with its rule (see :mod:`.helm_rules`).

The mapping facts come from the chart's `templates/clusterpolicy.yaml`: which values land in which ClusterPolicy
field, what the template writes only when non-empty (`if`), always, with a `default`, or quoted. Rename:
`driver.nvidiaDriverCRD.enabled` → `useNvidiaDriverCRD`. The validator and node status exporter versions default
to the chart's appVersion. Every value kept here reaches the render (a test walks this table); a value that would
not is ignored, with its reason in the notes the user sees.

Deliberate differences from the template:

* `repository`, `image` and `version` are copied even when empty: the template drops an empty part and NVIDIA then
  builds a broken image reference, while our model reports the incomplete reference at the key that caused it.
* `daemonsets.labels` does not receive the chart's own `helm.sh/chart` and `app.kubernetes.io/managed-by` labels:
  they describe a Helm release, and these objects are not one.

Ignored keys (accepted, no effect here) and why:

* `operator.{repository, image, version, imagePullPolicy, imagePullSecrets, env, resources, priorityClassName,
  nodeSelector, tolerations, affinity, annotations, labels, logging}` — shape NVIDIA's operator Deployment and
  the chart's own objects; Pulumi renders the operands instead.
* `operator.upgradeCRD`, `operator.cleanupCRD` — Helm hook Jobs that manage the chart's CRDs.
* `operator.defaultGPUMode` — not a ClusterPolicy field in v26.7.0 (the API server drops it).
* `driver.nvidiaDriverCRD.{deployDefaultCR, driverType, nodeSelector}` — shape the chart's default NVIDIADriver,
  which here is `operator.driver` itself (rendered the NVIDIADriver way with `nvidiaDriverCRD.enabled`).
* `driver.useOpenKernelModules` — a deprecated no-op upstream; `driver.kernelModuleType` decides.
* `toolkit.args`, `toolkit.hostNetwork`, `gds.args`, `gdrcopy.args` — NVIDIA's operator does not apply them.
* `operator.initContainer` (deprecated in the CRD), `operator.metrics` (the operator Deployment's metrics),
  `cdi.default` (deprecated: `cdi.enabled` decides), `kataManager` (no longer deployed since v26).
* `operator.defaultRuntime: docker` — the chart's default up to v24.9 (see :mod:`.helm_handlers`).
* Values of older charts: `dcgm.hostPort` (v24.3 and older; DCGM is reached through its Service),
  `driver.rollingUpdate` (v22.9.0; the driver DaemonSet updates with OnDelete).
* `psp` — PodSecurityPolicy left Kubernetes in 1.25; the chart no longer reads it.
* `draDriver` (except `gpus.enabled`) — configures the GPUCluster (DRA) stack, only deployed with
  `gpuCluster.deployCR`.
* `nameOverride`, `fullnameOverride` — names of the chart's own objects.

Rejected values: `platform.openshift: true`, `clusterPolicy.deployCR: false`, `gpuCluster.deployCR: true`,
`draDriver.gpus.enabled: true`, `kataManager.enabled: true`, a non-empty `extraObjects`. Keys of older charts
that no longer exist get a migration hint (:mod:`.helm_migrations`).
"""

from __future__ import annotations

from typing import Any, Literal

from gpu_operator import UPSTREAM_OPERATOR_VERSION
from gpu_operator.config.importers.helm_handlers import (
    DCGM_EXPORTER_CONFIG,
    DEFAULT_RUNTIME,
    DEVICE_PLUGIN_CONFIG,
    GLOBAL_VALUES,
    MIG_MANAGER_CONFIG,
    NFD_VALUES,
    NRI_PLUGIN,
    SERVICE_MONITOR,
    UPGRADE_POLICY,
)
from gpu_operator.config.importers.helm_rules import Copy, Handle, Ignore, Reject, Rule
from gpu_operator.config.importers.paths import MISSING, is_empty

__all__ = ["HELM_RULES", "HELM_RENAMES", "ignored_keys"]

_DEPLOYMENT = Ignore("shapes NVIDIA's operator Deployment; Pulumi renders the operands instead")
_NOT_APPLIED = Ignore("NVIDIA's operator does not apply it to this container either")


def _image(section: str, base: str, version_default: Any = MISSING) -> dict[str, Rule]:
    return {
        f"{section}.repository": Copy(f"{base}.repository", "always"),
        f"{section}.image": Copy(f"{base}.image", "always"),
        f"{section}.version": Copy(f"{base}.version", "always", default=version_default, quote=True),
        f"{section}.imagePullPolicy": Copy(f"{base}.imagePullPolicy"),
    }


def _copied(section: str, base: str, *keys: str) -> dict[str, Rule]:
    """Keys the template copies, when non-empty, under the same name."""
    return {f"{section}.{key}": Copy(f"{base}.{key}") for key in keys}


def _operand(
    section: str,
    *,
    enabled: Literal["always", "set"] | None = "always",
    enabled_default: Any = MISSING,
    version_default: Any = MISSING,
    container_only: bool = False,
) -> dict[str, Rule]:
    """The fields the template writes for every operand section (`operator.<section>` in our document)."""
    base = f"operator.{section}"
    rules = {**_image(section, base, version_default), **_copied(section, base, "imagePullSecrets", "env", "args")}
    if not container_only:
        rules.update(_copied(section, base, "resources", "hostNetwork"))
    if enabled is not None:
        rules[f"{section}.enabled"] = Copy(f"{base}.enabled", enabled, default=enabled_default)
    return rules


def _driver_manager(section: str, key: str) -> dict[str, Rule]:
    base = f"operator.{section}.{key}"
    return {**_image(f"{section}.{key}", base), **_copied(f"{section}.{key}", base, "env")}


_DRIVER: dict[str, Rule] = {
    **_operand("driver"),
    "driver.nvidiaDriverCRD.enabled": Copy("operator.driver.useNvidiaDriverCRD", "always"),
    "driver.nvidiaDriverCRD.deployDefaultCR": Ignore(
        "with nvidiaDriverCRD.enabled, operator.driver is the default NVIDIADriver here, named default as the "
        "chart's; without one (false) NVIDIA leaves the nodes no NVIDIADriver selects without a driver, and here "
        "they keep operator.driver"),
    "driver.nvidiaDriverCRD.driverType": Ignore(
        "the default NVIDIADriver here is driverType gpu; a vGPU guest driver is a drivers entry (driverType: "
        "vgpu) that pools name"),
    "driver.nvidiaDriverCRD.nodeSelector": Ignore("not read by the chart's template: a default NVIDIADriver selects "
                                                  "no nodes of its own"),
    "driver.useOpenKernelModules": Ignore("deprecated no-op upstream; driver.kernelModuleType decides"),
    "driver.kernelModuleType": Copy("operator.driver.kernelModuleType", "always"),
    "driver.usePrecompiled": Copy("operator.driver.usePrecompiled", "always"),
    "driver.rdma.enabled": Copy("operator.driver.rdma.enabled", "always"),
    "driver.rdma.useHostMofed": Copy("operator.driver.rdma.useHostMofed", "always"),
    **_copied(
        "driver", "operator.driver", "startupProbe", "livenessProbe", "readinessProbe", "repoConfig", "certConfig",
        "licensingConfig", "virtualTopology", "kernelModuleConfig", "secretEnv",
    ),
    **_driver_manager("driver", "manager"),
    "driver.rollingUpdate": Ignore(
        "removed from the chart in v22.9.1: the driver DaemonSet updates with OnDelete (a node gets the new driver "
        "when its driver pod is deleted); the other operands roll with daemonsets.rollingUpdate.maxUnavailable"
    ),
    "driver.upgradePolicy": UPGRADE_POLICY,
}

_VALIDATOR: dict[str, Rule] = {
    **_operand("validator", enabled=None, version_default=UPSTREAM_OPERATOR_VERSION),
    **{
        f"validator.{check}.env": Copy(f"operator.validator.{check}.env")
        for check in ("plugin", "cuda", "driver", "toolkit", "vfioPCI", "vgpuManager", "vgpuDevices")
    },
}

_DCGM_EXPORTER: dict[str, Rule] = {
    **_operand("dcgmExporter"),
    **_copied(
        "dcgmExporter", "operator.dcgmExporter", "annotations", "service", "hostPID", "hpcJobMapping",
        "enablePodLabels", "enablePodUID", "podLabelAllowlistRegex",
    ),
    "dcgmExporter.serviceMonitor": SERVICE_MONITOR,
    "dcgmExporter.config": DCGM_EXPORTER_CONFIG,
}

_OPERANDS: dict[str, Rule] = {
    **_DRIVER,
    **_VALIDATOR,
    **_DCGM_EXPORTER,
    **_operand("toolkit"),
    **_copied("toolkit", "operator.toolkit", "installDir"),
    "toolkit.args": _NOT_APPLIED,
    "toolkit.hostNetwork": _NOT_APPLIED,
    **_operand("devicePlugin"),
    "devicePlugin.config": DEVICE_PLUGIN_CONFIG,
    "devicePlugin.mps.root": Copy("operator.devicePlugin.mps.root"),
    **_operand("dcgm"),
    "dcgm.hostPort": Ignore(
        "removed from the chart in v24.9: the exporter reaches the standalone DCGM through the node-local Service "
        "nvidia-dcgm:5555, and no host port is opened"
    ),
    **_operand("gfd"),
    **_operand("migManager"),
    "migManager.config": MIG_MANAGER_CONFIG,
    **_copied("migManager", "operator.migManager", "gpuClientsConfig"),
    **_operand("nodeStatusExporter", version_default=UPSTREAM_OPERATOR_VERSION),
    **_operand("gds", container_only=True),
    **_operand("gdrcopy", enabled_default=False, container_only=True),
    "gds.args": _NOT_APPLIED,
    "gdrcopy.args": _NOT_APPLIED,
    **_operand("vgpuManager"),
    **_copied("vgpuManager", "operator.vgpuManager", "kernelModuleConfig"),
    **_driver_manager("vgpuManager", "driverManager"),
    **_operand("vgpuDeviceManager"),
    **_copied("vgpuDeviceManager", "operator.vgpuDeviceManager", "config"),
    **_operand("vfioManager"),
    **_driver_manager("vfioManager", "driverManager"),
    "kataManager": Ignore(
        "NVIDIA's operator no longer deploys the Kata manager since v26; sandboxWorkloads.mode: kata selects the "
        "Kata operands"
    ),
    "kataManager.enabled": Reject(
        is_empty, "the Kata manager is never deployed since GPU Operator v26; set false and use "
        "sandboxWorkloads.mode: kata",
    ),
    # both are written only when set, so false leaves them to the CR default (off)
    **_operand("sandboxDevicePlugin", enabled="set"),
    **_operand("kataSandboxDevicePlugin", enabled="set"),
    **_operand("ccManager"),
    "ccManager.defaultMode": Copy("operator.ccManager.defaultMode", "always", quote=True),
}

_CLUSTER_WIDE: dict[str, Rule] = {
    "platform.openshift": Reject(
        is_empty, "OpenShift is not supported by this package (no SCCs, no Driver Toolkit); set false, or deploy "
        "NVIDIA's operator from OperatorHub on OpenShift",
    ),
    "nfd.enabled": Copy("nfd.enabled", "always"),
    "nfd.nodefeaturerules": Copy("nfd.nodefeaturerules", "always"),
    "psa.enabled": Copy("operator.psa.enabled", "always"),
    "psp": Ignore("PodSecurityPolicy left Kubernetes in 1.25; the chart no longer reads it"),
    "cdi.enabled": Copy("operator.cdi.enabled", "always"),
    "cdi.default": Ignore(
        "deprecated in the ClusterPolicy CRD: cdi.enabled alone makes CDI the way GPUs reach containers"
    ),
    "cdi.nriPluginEnabled": NRI_PLUGIN,
    "sandboxWorkloads.enabled": Copy("operator.sandboxWorkloads.enabled", "always"),
    "sandboxWorkloads.defaultWorkload": Copy("operator.sandboxWorkloads.defaultWorkload"),
    "sandboxWorkloads.mode": Copy("operator.sandboxWorkloads.mode", quote=True),
    "hostPaths.rootFS": Copy("operator.hostPaths.rootFS", "always"),
    "hostPaths.driverInstallDir": Copy("operator.hostPaths.driverInstallDir", "always"),
    "hostPaths.kubeletRootDir": Copy("operator.hostPaths.kubeletRootDir"),
    **_copied(
        "daemonsets", "operator.daemonsets", "labels", "annotations", "tolerations", "priorityClassName",
        "updateStrategy",
    ),
    "daemonsets.rollingUpdate.maxUnavailable": Copy(
        "operator.daemonsets.rollingUpdate.maxUnavailable", "always", quote=True
    ),
    "mig.strategy": Copy("operator.mig.strategy"),
    **_copied("operator", "operator.operator", "runtimeClass", "use_ocp_driver_toolkit"),
    "operator.defaultRuntime": DEFAULT_RUNTIME,
    "operator.initContainer": Ignore("deprecated in the ClusterPolicy CRD; NVIDIA's operator no longer uses it"),
    "operator.metrics": Ignore("the metrics of NVIDIA's operator Deployment, which Pulumi replaces"),
    **{
        f"operator.{key}": _DEPLOYMENT
        for key in (
            "repository", "image", "version", "imagePullPolicy", "imagePullSecrets", "env", "resources",
            "priorityClassName", "nodeSelector", "tolerations", "affinity", "annotations", "labels", "logging",
        )
    },
    "operator.upgradeCRD": Ignore("a Helm hook Job that updates the chart's CRDs; Pulumi manages CRDs as resources"),
    "operator.cleanupCRD": Ignore("a Helm hook Job that deletes the chart's CRDs; Pulumi manages CRDs as resources"),
    "operator.defaultGPUMode": Ignore("not a ClusterPolicy field in v26.7.0; the API server drops it"),
    "clusterPolicy.deployCR": Reject(
        lambda value: not is_empty(value),
        "this package always deploys the ClusterPolicy's operands; remove the key (or set true)",
    ),
    "gpuCluster.deployCR": Reject(
        is_empty, "the GPUCluster (DRA) stack is not rendered by this package, and the chart refuses it together with "
        "clusterPolicy.deployCR; set false",
    ),
    "draDriver": Ignore("configures the GPUCluster (DRA) stack, only deployed with gpuCluster.deployCR"),
    "draDriver.gpus.enabled": Reject(
        is_empty, "the NVIDIA DRA driver is not rendered by this package, and the chart refuses it together with the "
        "device plugin; set false",
    ),
    "extraObjects": Reject(
        is_empty, "extra manifests templated by Helm are not rendered; declare them as resources in your Pulumi "
        "program, and remove them here",
    ),
    "node-feature-discovery": NFD_VALUES,
    "global": GLOBAL_VALUES,
    "nameOverride": Ignore("names the chart's own objects"),
    "fullnameOverride": Ignore("names the chart's own objects"),
}

#: Dotted values key → rule.
HELM_RULES: dict[str, Rule] = {**_CLUSTER_WIDE, **_OPERANDS}


def _pairs(target: str, key: str) -> list[tuple[str, str]]:
    """The target/key pair and their parents for as long as both end in the same names."""
    pairs = [(target, key)]
    ours, theirs = target.split("."), key.split(".")
    while len(ours) > 1 and len(theirs) > 1 and ours[-1] == theirs[-1]:
        ours, theirs = ours[:-1], theirs[:-1]
        pairs.append((".".join(ours), ".".join(theirs)))
    return pairs


def _renames() -> tuple[tuple[str, str], ...]:
    """(document path, values key) pairs, so problems found in the document are reported under the values key."""
    pairs: dict[str, str] = {}
    for key, rule in HELM_RULES.items():
        if isinstance(rule, Copy):
            pairs.update(_pairs(rule.target, key))
        elif isinstance(rule, Handle):
            pairs.update(rule.targets)
    return tuple(pairs.items())


HELM_RENAMES = _renames()


def ignored_keys() -> dict[str, str]:
    """Values key → why the chart's value has no effect here."""
    return {key: rule.reason for key, rule in HELM_RULES.items() if isinstance(rule, Ignore)}
