"""Import the Network Operator's configuration: NicClusterPolicy manifests (with an IPoIBNetwork) and chart values.

A NicClusterPolicy becomes our `network` section: its images, the DOCA-OFED driver settings (or `mofed: host`
without `ofedDriver`), the device plugins with their JSON configs read back into typed settings, IPoIB and DOCA
telemetry. Several manifests are merged in order, as kustomize applies Azure's overlays to its base (later keys
win, maps merge). What our render derives instead (node affinity to the IB nodes, tolerations from the pool
taints) or cannot express (several resources per plugin, selectors beyond vendors/link types) is an error naming
the field, never dropped. Network Operator chart values become `network.values`, except the NFD switches our render
owns: the chart's own defaults import, what is not carried over is named with the reason.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from gpu_operator.config.errors import ConfigError, Problem
from gpu_operator.config.network import DEFAULT_BLACKLIST_MODULES_FILE

__all__ = [
    "NETWORK_VALUES_KEYS", "ignored_network_values", "import_network_manifests", "import_network_values",
    "is_network_values",
]

SOURCE = "NicClusterPolicy"
POLICY = ("mellanox.com/v1alpha1", "NicClusterPolicy")
IPOIB_NETWORK = ("mellanox.com/v1alpha1", "IPoIBNetwork")
#: Top-level keys only the network-operator chart's values have.
NETWORK_VALUES_KEYS = frozenset({"sriovNetworkOperator", "maintenanceOperator", "upgradeCRDs", "sriov-network-operator",
                                 "maintenance-operator-chart"})
_IB_AFFINITY = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "feature.node.kubernetes.io/pci-15b3.present", "operator": "In", "values": ["true"]}]}]}}
_IMAGE_KEYS = ("repository", "image", "version")
_SECTION_IMAGES = {"nvIpam": "nvIpamImage", "docaTelemetryService": "docaTelemetryImage"}
_SECONDARY_IMAGES = {"multus": "multusImage", "cniPlugins": "cniPluginsImage", "ipoib": "ipoibImage"}


def _merge(base: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def _image(section: Mapping[str, Any], path: str, problems: list[Problem]) -> dict[str, str]:
    missing = [key for key in _IMAGE_KEYS if not isinstance(section.get(key), str)]
    if missing:
        problems.append(Problem(path, f"set {', '.join(missing)}: the image is written repository/image:version"))
    return {key: section[key] for key in _IMAGE_KEYS if isinstance(section.get(key), str)}


def _ofed(section: Mapping[str, Any], problems: list[Problem]) -> dict[str, Any]:
    path = "spec.ofedDriver"
    ofed: dict[str, Any] = {"image": _image(section, path, problems)}
    env = [dict(var) for var in section.get("env") or []]
    blacklist = {"name": "OFED_BLACKLIST_MODULES_FILE", "value": DEFAULT_BLACKLIST_MODULES_FILE}
    ofed["azureModuleBlacklist"] = blacklist in env
    env = [var for var in env if var != blacklist]
    if env:
        ofed["env"] = env
    for key in ("upgradePolicy", "startupProbe", "livenessProbe", "readinessProbe", "terminationGracePeriodSeconds",
                "forcePrecompiled"):
        if key in section:
            ofed[key] = copy.deepcopy(section[key])
    ofed["resources"] = {}  # requests the manifest does not set are not invented
    for item in section.get("containerResources") or []:
        if item.get("name") != "mofed-container":
            problems.append(Problem(f"{path}.containerResources", f"container {item.get('name')!r} is not the "
                                                                  "driver's (mofed-container)"))
            continue
        ofed["resources"] = {k: dict(item[k]) for k in ("requests", "limits") if k in item}
    for key in ("certConfig", "repoConfig", "imagePullSecrets"):
        if section.get(key):
            problems.append(Problem(f"{path}.{key}", "not supported by this package's render; remove it"))
    return ofed


def _plugin_config(section: Mapping[str, Any], path: str, list_key: str, problems: list[Problem]) -> dict[str, Any]:
    try:
        config = json.loads(section.get("config") or "")
    except json.JSONDecodeError as error:
        problems.append(Problem(f"{path}.config", f"is not JSON ({error.msg} at line {error.lineno})"))
        return {}
    entries = config.get(list_key) if isinstance(config, dict) else None
    if not isinstance(entries, list) or len(entries) != 1 or not isinstance(entries[0], dict):
        problems.append(Problem(f"{path}.config", f"{list_key} must hold exactly one resource (this package "
                                                  "renders one resource per plugin)"))
        return {}
    return entries[0]


def _shared(section: Mapping[str, Any], problems: list[Problem]) -> dict[str, Any]:
    path = "spec.rdmaSharedDevicePlugin"
    out: dict[str, Any] = {"image": _image(section, path, problems)}
    entry = _plugin_config(section, path, "configList", problems)
    for key in ("resourceName", "resourcePrefix", "rdmaHcaMax", "selectors"):
        if key in entry:
            out[key] = copy.deepcopy(entry[key])
    for key in set(entry) - {"resourceName", "resourcePrefix", "rdmaHcaMax", "selectors"}:
        problems.append(Problem(f"{path}.config.configList[0].{key}", "not supported: select devices with selectors"))
    if "selectors" in out:
        out["selectors"] = {"vendors": [], "linkTypes": [], **out["selectors"]}
    return out


def _sriov(section: Mapping[str, Any], problems: list[Problem]) -> dict[str, Any]:
    path = "spec.sriovDevicePlugin"
    out: dict[str, Any] = {"image": _image(section, path, problems)}
    entry = _plugin_config(section, path, "resourceList", problems)
    for key in ("resourceName", "resourcePrefix"):
        if key in entry:
            out[key] = entry[key]
    if "resourcePrefix" not in entry and entry:
        problems.append(Problem(f"{path}.config.resourceList[0].resourcePrefix",
                                "unset means the plugin's default intel.com: set it (e.g. rdma or nvidia.com)"))
    selectors = entry.get("selectors", [])
    selectors = [selectors] if isinstance(selectors, dict) else selectors
    if entry and len(selectors) != 1:
        problems.append(Problem(f"{path}.config.resourceList[0].selectors", "give exactly one selector"))
    elif entry:
        selector = dict(selectors[0])
        if selector.pop("isRdma", False) is not True:
            problems.append(Problem(f"{path}.config.resourceList[0].selectors.isRdma",
                                    "must be true: without it the VFs' RDMA devices are not mounted"))
        out["vendors"] = selector.pop("vendors", [])
        out["linkTypes"] = selector.pop("linkTypes", [])
        for key in selector:
            problems.append(Problem(f"{path}.config.resourceList[0].selectors.{key}",
                                    "not supported: select VFs by vendors and linkTypes"))
    for key in set(entry) - {"resourceName", "resourcePrefix", "selectors"}:
        problems.append(Problem(f"{path}.config.resourceList[0].{key}", "not supported; remove it"))
    return out


def _ipoib(network: Mapping[str, Any] | None, problems: list[Problem]) -> dict[str, Any]:
    if network is None:
        problems.append(Problem("spec.secondaryNetwork.ipoib", "an IPoIB network needs its IPoIBNetwork manifest: "
                                                               "import it together with the NicClusterPolicy"))
        return {}
    spec = network.get("spec") or {}
    out: dict[str, Any] = {"name": network.get("metadata", {}).get("name")}
    for key in ("networkNamespace", "master", "ipam"):
        if key in spec:
            out[key] = spec[key]
    return out


def import_network_manifests(manifests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Our `network` section for NicClusterPolicy manifests (merged in order) and an optional IPoIBNetwork."""
    problems: list[Problem] = []
    policy: dict[str, Any] = {}
    ipoib_network: Mapping[str, Any] | None = None
    for index, manifest in enumerate(manifests):
        kind = (manifest.get("apiVersion"), manifest.get("kind"))
        if kind == IPOIB_NETWORK:
            ipoib_network = manifest
        elif kind == POLICY:
            name = (manifest.get("metadata") or {}).get("name")
            if name != "nic-cluster-policy":
                problems.append(Problem(f"[{index}].metadata.name", f"{name!r}: the operator reconciles only "
                                                                    "nic-cluster-policy (others get state ignore)"))
            _merge(policy, manifest.get("spec") or {})
        else:
            problems.append(Problem(f"[{index}]", f"{kind[1]!r} is neither a NicClusterPolicy nor an IPoIBNetwork"))
    network: dict[str, Any] = {"enabled": True}
    if "ofedDriver" in policy:
        network["ofedDriver"] = _ofed(policy["ofedDriver"], problems)
    else:
        network["mofed"] = "host"
    plugins = []
    if "sriovDevicePlugin" in policy:
        plugins.append("sriov")
        network["sriovDevicePlugin"] = _sriov(policy["sriovDevicePlugin"], problems)
    if "rdmaSharedDevicePlugin" in policy:
        plugins.append("shared")
        network["rdmaSharedDevicePlugin"] = _shared(policy["rdmaSharedDevicePlugin"], problems)
    network["devicePlugins"] = plugins
    secondary = policy.get("secondaryNetwork") or {}
    for key, field in _SECONDARY_IMAGES.items():
        if key in secondary:
            network[field] = _image(secondary[key], f"spec.secondaryNetwork.{key}", problems)
    if "ipoib" in secondary:
        network["ipoib"] = _ipoib(ipoib_network, problems)
    for key, field in _SECTION_IMAGES.items():
        if key in policy:
            network[field] = _image(policy[key], f"spec.{key}", problems)
    if "docaTelemetryService" in policy:
        network["docaTelemetry"] = True
    if policy.get("nodeAffinity", _IB_AFFINITY) != _IB_AFFINITY:
        problems.append(Problem("spec.nodeAffinity", "the policy always runs on nodes labelled "
                                                     "feature.node.kubernetes.io/pci-15b3.present=true; remove it"))
    if policy.get("tolerations"):
        problems.append(Problem("spec.tolerations", "tolerations come from the pools' taints: declare the taints "
                                                    "on pools and remove them here"))
    known = {"ofedDriver", "sriovDevicePlugin", "rdmaSharedDevicePlugin", "secondaryNetwork", "nvIpam",
             "docaTelemetryService", "nodeAffinity", "tolerations"}
    for key in sorted(set(policy) - known):
        problems.append(Problem(f"spec.{key}", "not rendered by this package; remove it"))
    if problems:
        raise ConfigError(problems, SOURCE)
    return network


def is_network_values(values: Mapping[str, Any]) -> bool:
    """Whether Helm values are the network-operator chart's (keys the GPU Operator chart does not have)."""
    nfd = values.get("nfd")
    return bool(NETWORK_VALUES_KEYS & set(values)) or (isinstance(nfd, Mapping) and "deployNodeFeatureRules" in nfd)


#: An NFD switch the render writes itself (render/network/chart.py): its value there, and why another is not imported.
_RENDERED_NFD = {
    "deployNodeFeatureRules": (False, "the render sets it false: the chart's rule also labels Ethernet-only "
                                      "Mellanox nodes, while the render's own NodeFeatureRule labels the InfiniBand "
                                      "VFs"),
}


def ignored_network_values(values: Mapping[str, Any]) -> dict[str, str]:
    """The network-operator chart values that are not imported, each with the reason (for notes to the user)."""
    nfd = values.get("nfd")
    if not isinstance(nfd, Mapping):
        return {}
    return {f"nfd.{key}": reason for key, (rendered, reason) in _RENDERED_NFD.items()
            if isinstance(nfd.get(key), bool) and nfd[key] is not rendered}


def import_network_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Our `network` section for network-operator chart values: everything but the NFD switches goes to `values`.

    The NFD switches are the render's: `nfd.enabled: true` and `nfd.deployNodeFeatureRules: false`. The chart's
    own defaults (both true) import, the rule switch noted as not imported (:func:`ignored_network_values`);
    `nfd.enabled: false` cannot be honoured (the Network Operator's NFD is the cluster's one) and is an error."""
    values = copy.deepcopy(dict(values))
    nfd = values.pop("nfd", None) or {}
    problems: list[Problem] = []
    if not isinstance(nfd, Mapping):
        problems.append(Problem("nfd", f"must be a mapping (enabled, deployNodeFeatureRules), got {nfd!r}"))
        nfd = {}
    if nfd.get("enabled") is False:
        problems.append(Problem("nfd.enabled", "the Network Operator's NFD is the cluster's one NFD (the GPU "
                                               "operator's is turned off): remove nfd.enabled: false"))
    for key in ("enabled", "deployNodeFeatureRules"):
        if key in nfd and not isinstance(nfd[key], bool):
            problems.append(Problem(f"nfd.{key}", f"must be true or false, got {nfd[key]!r}"))
    for key in sorted(set(nfd) - {"enabled", "deployNodeFeatureRules"}):
        problems.append(Problem(f"nfd.{key}", "not a key of the network-operator chart's nfd section"))
    if problems:
        raise ConfigError(problems, "network-operator values")
    return {"enabled": True, **({"values": values} if values else {})}
