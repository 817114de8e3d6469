"""The NicClusterPolicy `nic-cluster-policy` (`mellanox.com/v1alpha1`), from the typed `network` section.

The Network Operator reconciles only the cluster-scoped instance of that name. Its parts, each optional:

* `ofedDriver` (with `network.mofed: operator`): the DOCA-OFED driver container (`doca-driver`), compiled on
  the node; its upgrade policy, probes, grace period, the compile-sized requests of `mofed-container`, and on
  Azure `OFED_BLACKLIST_MODULES_FILE`. It sets `network.nvidia.com/operator.mofed.wait=false` on a node once
  MOFED is loaded, and the device plugins wait for that label. With host MOFED there is no `ofedDriver` and the
  operator sets the label at once;
* `rdmaSharedDevicePlugin` / `sriovDevicePlugin` (from `network.devicePlugins`) with generated JSON configs;
* `secondaryNetwork` (Multus, CNI plugins, IPoIB CNI) and `nvIpam` for an IPoIB network;
* `docaTelemetryService` when asked for;
* `nodeAffinity` to the InfiniBand nodes and `tolerations` for every pool taint, injected into each DaemonSet.
"""

from __future__ import annotations

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.effective import pool_tolerations
from gpu_operator.config.network import DEFAULT_BLACKLIST_MODULES_FILE, OfedDriverSpec, OfedProbe, UpgradePolicy
from gpu_operator.render.k8s import Object, metadata
from gpu_operator.render.network.device_plugins import rdma_shared_config, sriov_config, to_json
from gpu_operator.render.network.node_feature_rule import IB_NODE_LABEL

__all__ = ["MOFED_CONTAINER", "POLICY_NAME", "nic_cluster_policy", "ofed_driver", "ib_node_affinity"]

POLICY_NAME = "nic-cluster-policy"
MOFED_CONTAINER = "mofed-container"


def ib_node_affinity() -> Object:
    """Required node affinity to nodes the NodeFeatureRule labelled InfiniBand."""
    term = {"matchExpressions": [{"key": IB_NODE_LABEL, "operator": "In", "values": ["true"]}]}
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}


def _probe(probe: OfedProbe) -> Object:
    return {"initialDelaySeconds": probe.initial_delay_seconds, "periodSeconds": probe.period_seconds}


def _upgrade_policy(policy: UpgradePolicy) -> Object:
    drain: Object = {
        "enable": policy.drain.enable,
        "force": policy.drain.force,
        "deleteEmptyDir": policy.drain.delete_empty_dir,
        "timeoutSeconds": policy.drain.timeout_seconds,
    }
    if policy.drain.pod_selector is not None:
        drain["podSelector"] = policy.drain.pod_selector
    out: Object = {
        "autoUpgrade": policy.auto_upgrade,
        "maxParallelUpgrades": policy.max_parallel_upgrades,
        "drain": drain,
    }
    if policy.safe_load:
        out["safeLoad"] = True
    if policy.wait_for_completion is not None:
        out["waitForCompletion"] = {
            "podSelector": policy.wait_for_completion.pod_selector,
            "timeoutSeconds": policy.wait_for_completion.timeout_seconds,
        }
    return out


def ofed_driver(spec: OfedDriverSpec) -> Object:
    """The `ofedDriver` section."""
    env = [{"name": var.name, "value": var.value} for var in spec.env]
    if spec.azure_module_blacklist and not any(var["name"] == "OFED_BLACKLIST_MODULES_FILE" for var in env):
        env.insert(0, {"name": "OFED_BLACKLIST_MODULES_FILE", "value": DEFAULT_BLACKLIST_MODULES_FILE})
    out: Object = {
        **spec.image.to_spec(),
        "forcePrecompiled": spec.force_precompiled,
        "terminationGracePeriodSeconds": spec.termination_grace_period_seconds,
        "upgradePolicy": _upgrade_policy(spec.upgrade_policy),
        "startupProbe": _probe(spec.startup_probe),
        "livenessProbe": _probe(spec.liveness_probe),
        "readinessProbe": _probe(spec.readiness_probe),
    }
    if env:
        out["env"] = env
    resources: Object = {"name": MOFED_CONTAINER}
    if spec.resources.requests:
        resources["requests"] = dict(spec.resources.requests)
    if spec.resources.limits:
        resources["limits"] = dict(spec.resources.limits)
    if len(resources) > 1:
        out["containerResources"] = [resources]
    return out


def nic_cluster_policy(config: GpuStackConfig) -> Object:
    """The NicClusterPolicy of the cluster."""
    network = config.network
    spec: Object = {"nodeAffinity": ib_node_affinity()}
    tolerations = [t.model_dump(by_alias=True, exclude_none=True) for t in pool_tolerations(config.pools)]
    if tolerations:
        spec["tolerations"] = tolerations
    if network.mofed == "operator":
        spec["ofedDriver"] = ofed_driver(network.ofed_driver)
    if "shared" in network.device_plugins:
        plugin = network.rdma_shared_device_plugin
        spec["rdmaSharedDevicePlugin"] = {**plugin.image.to_spec(), "config": to_json(rdma_shared_config(plugin))}
    if "sriov" in network.device_plugins:
        plugin = network.sriov_device_plugin
        spec["sriovDevicePlugin"] = {**plugin.image.to_spec(), "config": to_json(sriov_config(plugin))}
    if network.ipoib is not None:
        spec["secondaryNetwork"] = {
            "cniPlugins": network.cni_plugins_image.to_spec(),
            "multus": network.multus_image.to_spec(),
            "ipoib": network.ipoib_image.to_spec(),
        }
        if network.ipoib.ip_pool is not None:
            spec["nvIpam"] = {**network.nv_ipam_image.to_spec(), "enableWebhook": False}
    if network.doca_telemetry:
        spec["docaTelemetryService"] = network.doca_telemetry_image.to_spec()
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": metadata(POLICY_NAME),
        "spec": spec,
    }
