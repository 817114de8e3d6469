"""Drivers of their own: one DaemonSet per node pool of an NVIDIADriver, named, labelled and selected as NVIDIA's
NVIDIADriver controller does (gpu-operator v26.7.0 `internal/state/driver.go` `getDriverName`, `getDriverAppName`,
`getDriverSpec`; `internal/state/nodepool.go` `getNodePools`; `manifests/state-driver/0500_daemonset.yaml`), and
the cluster's driver kept off their nodes."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import parse_config
from gpu_operator.render.operands import driver
from gpu_operator.render.operands.nvidia_driver_names import driver_app_name, driver_name, stand_in_uid, string_hash
from tests.render.operands.helpers import assert_valid, container, env_of, pod_of, render_operand
from tests.support.agents import with_agents

AKS = {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}
T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}
A100 = {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4"}
#: NVIDIA's TestGetDriverAppName uid (internal/state/driver_test.go)
UID = "bfac7359-6033-45ce-88d6-53db0078526e"
OWNER = "nvidia.com/gpu-operator.driver.owner"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
POOL_TAINT = {"effect": "NoSchedule", "key": "sku", "operator": "Equal", "value": "gpu"}


def _doc(*pools: dict[str, Any], **sections: Any) -> dict[str, Any]:
    return {"aks": AKS, "pools": list(pools), "network": {"enabled": False}, **sections}


def _objects(document: dict[str, Any]) -> list[dict[str, Any]]:
    objects = render_operand(driver.render, document)
    assert_valid(objects)
    return objects


def _daemonsets(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in _objects(document) if o["kind"] == "DaemonSet"}


# --- NVIDIA's names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("os_tag", "kernel", "expected"), [
    ("ubuntu20.04", None, "nvidia-gpu-driver-ubuntu20.04-67cc6dbb79"),
    ("ubuntu20.04", "5.15.0-70-generic", "nvidia-gpu-driver-ubuntu20.04-59b779bcc5"),
    ("redhatCoreOS4.14-414.92.202309282257", "5.15.0-70-generic",
     "nvidia-gpu-driver-redhatCoreOS4.14-414.92.2023092822-59b779bcc5"),  # cut to 63 characters
    ("rocky9", "5.15.0-70-generic", "nvidia-gpu-driver-rocky9-59b779bcc5"),
])
def test_daemonset_names_are_nvidias(os_tag: str, kernel: str | None, expected: str) -> None:
    """NVIDIA's own vectors: internal/state/driver_test.go TestGetDriverAppName."""
    assert driver_app_name("gpu", os_tag, UID, kernel) == expected
    assert len(driver_app_name("gpu", "x" * 80, UID)) == 63


def test_the_hash_is_fnv1a_safe_encoded() -> None:
    """utils.GetStringHash: FNV-1a 32 (hash/fnv New32a) of the text, decimal digits through rand.SafeEncodeString."""
    assert string_hash("") == "65bb57b6b5"  # 2166136261, the FNV offset basis itself: 2→6, 1→5, 6→b, 3→7
    assert string_hash(UID) == "67cc6dbb79"


def test_rbac_names_are_nvidias() -> None:
    """getDriverName: nvidia-<driverType>-driver-<cr>-<osTag>; the vGPU host manager's is nvidia-vgpu-manager-..."""
    assert driver_name("canary", "gpu", "ubuntu22.04") == "nvidia-gpu-driver-canary-ubuntu22.04"
    assert driver_name("canary", "vgpu", "rhel9") == "nvidia-vgpu-driver-canary-rhel9"
    assert driver_name("lab", "vgpu-host-manager", "ubuntu22.04") == "nvidia-vgpu-manager-lab-ubuntu22.04"
    assert stand_in_uid("canary") == stand_in_uid("canary") != stand_in_uid("canary2")


# --- a pool's driver next to the cluster's -----------------------------------------------------------------


def test_each_driver_gets_its_daemonset_and_the_cluster_driver_keeps_off_its_nodes() -> None:
    document = _doc({**H100, "driver": "training"}, {**T4, "driver": {"version": "580.105.08",
                                                                      "kernelModuleType": "proprietary"}}, A100,
                    drivers={"training": {"version": "595.91.07", "kernelModuleType": "open", "uid": UID}})
    sets = _daemonsets(document)
    training = sets["nvidia-gpu-driver-ubuntu22.04-67cc6dbb79"]
    t4 = sets[driver_app_name("gpu", "ubuntu22.04", stand_in_uid("t4"))]
    cluster = sets["nvidia-driver-daemonset"]
    assert len(sets) == 3
    app = "nvidia-gpu-driver-ubuntu22.04-67cc6dbb79"
    nvidia_labels = {"app": app, "nvidia.com/node.os-version": "ubuntu22.04", "nvidia.com/precompiled": "false",
                     "app.kubernetes.io/component": "nvidia-driver"}
    assert training["metadata"]["labels"] == {**nvidia_labels, "app.kubernetes.io/managed-by": "pulumi-gpu-operator",
                                              "nvidia.com/gpu-operator.state": "state-driver", OWNER: "training"}
    assert training["spec"]["template"]["metadata"]["labels"] == nvidia_labels
    assert training["spec"]["selector"] == {"matchLabels": {"app": app}}
    pod = pod_of(training)
    # the template's gpu.deploy.driver, then getNodePools' selector: the CR's, gpu.present, the owner, the OS
    assert pod["nodeSelector"] == {
        "nvidia.com/gpu.deploy.driver": "true", "nvidia.com/gpu.present": "true", OWNER: "training",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
    }
    assert pod["serviceAccountName"] == "nvidia-gpu-driver-training-ubuntu22.04"
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "labelSelector"]["matchExpressions"][0]["values"] == ["nvidia-driver", "nvidia-vgpu-manager"]
    assert pod["tolerations"] == [GPU_TOLERATION, POOL_TAINT]
    main = container(training, "nvidia-driver-ctr")
    assert main["image"] == "nvcr.io/nvidia/driver:595.91.07-ubuntu22.04"
    assert main["args"] == ["init"] and main["env"][0] == {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}
    assert env_of(main)["KERNEL_MODULE_TYPE"] == "open"
    assert env_of(container(t4, "nvidia-driver-ctr"))["KERNEL_MODULE_TYPE"] == "proprietary"
    assert container(t4, "nvidia-driver-ctr")["image"] == "nvcr.io/nvidia/driver:580.105.08-ubuntu22.04"
    assert pod_of(t4)["nodeSelector"][OWNER] == "t4"
    # the cluster driver: NVIDIA's ClusterPolicy DaemonSet, off every node a driver of its own owns
    assert pod_of(cluster)["affinity"]["nodeAffinity"] == {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": OWNER, "operator": "DoesNotExist"}]}]}}
    assert cluster["spec"]["selector"] == {"matchLabels": {"app": "nvidia-driver-daemonset"}}
    accounts = [o["metadata"]["name"] for o in _objects(document) if o["kind"] == "ServiceAccount"]
    assert accounts == ["nvidia-driver", "nvidia-gpu-driver-training-ubuntu22.04", "nvidia-gpu-driver-t4-ubuntu22.04"]


def test_without_drivers_of_their_own_the_cluster_driver_is_unchanged() -> None:
    assert "nodeAffinity" not in pod_of(_daemonsets(_doc(T4))["nvidia-driver-daemonset"])["affinity"]


def test_a_pool_driver_inherits_the_clusters_and_overrides_what_it_writes() -> None:
    cluster = {"driver": {"env": [{"name": "A", "value": "cluster"}], "args": ["--x"],
                          "rdma": {"enabled": True, "useHostMofed": True}},
               "daemonsets": {"labels": {"team": "gpu"}, "priorityClassName": "gpu-critical"}}
    own = {"env": [{"name": "B", "value": "own"}], "rdma": {"enabled": False}, "labels": {"tier": "canary"},
           "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]}
    sets = _daemonsets(_doc({**H100, "driver": own}, operator=cluster))
    ds = sets[driver_app_name("gpu", "ubuntu22.04", stand_in_uid("h100"))]
    main = container(ds, "nvidia-driver-ctr")
    assert env_of(main)["B"] == "own" and "A" not in env_of(main)  # a list replaces the cluster's whole
    assert main["args"] == ["init", "--x"]  # NVIDIADriver appends args to init
    assert "nvidia-peermem-ctr" not in [c["name"] for c in pod_of(ds)["containers"]]  # rdma merged key by key
    assert ds["spec"]["template"]["metadata"]["labels"]["tier"] == "canary"
    assert "team" not in ds["spec"]["template"]["metadata"]["labels"]  # labels replace the cluster's
    assert pod_of(ds)["priorityClassName"] == "gpu-critical"
    # the template's toleration first, the driver's own, and its pools' taints whatever it writes
    assert pod_of(ds)["tolerations"] == [
        GPU_TOLERATION, {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}, POOL_TAINT]


def test_labels_nvidia_keeps_for_itself_are_dropped() -> None:
    """sanitizeDriverLabels: `app` and `app.kubernetes.io/*` keys of the spec's labels are skipped."""
    own = {"labels": {"app": "mine", "app.kubernetes.io/name": "x", "team": "a"}}
    [ds] = [d for n, d in _daemonsets(_doc({**T4, "driver": own})).items() if n != "nvidia-driver-daemonset"]
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert labels["team"] == "a" and labels["app"] == ds["metadata"]["name"] and "app.kubernetes.io/name" not in labels


def test_node_affinity_and_annotations_reach_the_pod() -> None:
    affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}
    own = {"nodeAffinity": affinity, "annotations": {"example.com/owner": "ml"}}
    [ds] = [d for n, d in _daemonsets(_doc({**T4, "driver": own})).items() if n != "nvidia-driver-daemonset"]
    assert pod_of(ds)["affinity"]["nodeAffinity"] == affinity
    assert ds["metadata"]["annotations"]["example.com/owner"] == "ml"  # on the DaemonSet and its pods, as NVIDIA's
    assert ds["spec"]["template"]["metadata"]["annotations"]["example.com/owner"] == "ml"


def test_precompiled_pools_per_kernel_with_nvidias_names_and_labels() -> None:
    kernels = ["5.15.0-1074-azure"]
    systems = {"operatingSystems": [{"id": "ubuntu", "versionId": "22.04", "kernelVersions": kernels}]}
    own = {"usePrecompiled": True, "version": "580", "uid": UID}
    sets = _daemonsets(_doc({**T4, "driver": own}, cluster=systems))
    precompiled = sets[driver_app_name("gpu", "ubuntu22.04", UID, kernels[0])]
    assert precompiled["metadata"]["labels"]["nvidia.com/precompiled"] == "true"
    assert precompiled["metadata"]["labels"]["nvidia.com/precompiled.kernel-version"] == "5.15.0-1074-azure"
    assert pod_of(precompiled)["nodeSelector"]["feature.node.kubernetes.io/kernel-version.full"] == kernels[0]
    assert container(precompiled, "nvidia-driver-ctr")["image"] == "nvcr.io/nvidia/driver:580-5.15.0-1074-azure-ubuntu22.04"
    # a driver written here inherits the cluster's startup probe (an imported NVIDIADriver without one carries
    # getDefaultStartupProbe's 5 s for precompiled drivers, see tests/config/importers/test_nvidia_driver_manifest.py)
    assert container(precompiled, "nvidia-driver-ctr")["startupProbe"]["initialDelaySeconds"] == 60
    compiling = sets["nvidia-gpu-driver-ubuntu22.04-67cc6dbb79"]  # cluster.unlistedKernels: compile
    assert pod_of(compiling)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "feature.node.kubernetes.io/kernel-version.full", "operator": "NotIn", "values": kernels}]


def test_a_selector_driver_serves_every_os_of_the_cluster() -> None:
    """Nodes outside the pools: their OSes are the cluster's; the CR's selector is merged into the DaemonSet's."""
    systems = {"operatingSystems": [{"id": "ubuntu", "versionId": "22.04"}, {"id": "rhel", "versionId": "9.4"}]}
    document = {"cluster": systems, "drivers": {"lab": {"nodeSelector": {"team": "lab"}, "uid": UID}}}
    sets = _daemonsets(document)
    rhel = sets["nvidia-gpu-driver-rhel9-67cc6dbb79"]
    assert pod_of(rhel)["nodeSelector"] == {
        "nvidia.com/gpu.deploy.driver": "true", "team": "lab", "nvidia.com/gpu.present": "true", OWNER: "lab",
        "feature.node.kubernetes.io/system-os_release.ID": "rhel",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": "9",
    }
    assert "nvidia-gpu-driver-ubuntu22.04-67cc6dbb79" in sets
    assert {"nvidia-driver-daemonset-ubuntu22.04", "nvidia-driver-daemonset-rhel9"} <= set(sets)


def test_use_nvidia_driver_crd_renders_the_cluster_driver_as_the_default_nvidiadriver() -> None:
    sets = _daemonsets({"operator": {"driver": {"useNvidiaDriverCRD": True}}})
    [name] = sets
    assert name == driver_app_name("gpu", "ubuntu22.04", stand_in_uid("default"))
    assert pod_of(sets[name])["nodeSelector"][OWNER] == "default"
    assert pod_of(sets[name])["serviceAccountName"] == "nvidia-gpu-driver-default-ubuntu22.04"
    objects = _objects({"operator": {"driver": {"useNvidiaDriverCRD": True}}})
    assert "nvidia-driver" not in [o["metadata"]["name"] for o in objects]


@pytest.mark.parametrize(("document", "strategy"), [
    ({}, {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}),
    ({"upgradePolicy": {"autoUpgrade": False}}, {"type": "OnDelete"}),
    ({"upgradePolicy": {"maxParallelUpgrades": 0, "maxUnavailable": "10%"}},
     {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}}),
    ({"upgradePolicy": {"maxParallelUpgrades": 5, "maxUnavailable": 3}},
     {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 3}}),
])
def test_each_driver_rolls_by_its_own_upgrade_policy_without_the_controller(document: dict, strategy: dict) -> None:
    own = {"upgradePolicy": {"maxParallelUpgrades": 2}} if not document else document
    sets = _daemonsets(_doc({**T4, "driver": own}))
    [ds] = [d for n, d in sets.items() if n != "nvidia-driver-daemonset"]
    assert ds["spec"]["updateStrategy"] == strategy
    assert sets["nvidia-driver-daemonset"]["spec"]["updateStrategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    for ds in _daemonsets(with_agents(_doc({**T4, "driver": own}))).values():
        assert ds["spec"]["updateStrategy"] == {"type": "OnDelete"}  # the controller upgrades


def test_pools_carry_the_owner_label_from_creation() -> None:
    from gpu_operator.render.aks.node_labels import pool_node_labels

    config = parse_config(_doc({**H100, "driver": "training"}, {**T4, "driver": {"version": "580.105.08"}}, A100,
                               drivers={"training": {"version": "595.91.07"}}))
    owners = [pool_node_labels(pool, config, frozenset()).get(OWNER) for pool in config.pools]
    assert owners == ["training", "t4", None]
    crd = parse_config(_doc(A100, operator={"driver": {"useNvidiaDriverCRD": True}}))
    assert pool_node_labels(crd.pools[0], crd, frozenset())[OWNER] == "default"


def test_a_pool_may_not_set_the_owner_label_itself() -> None:
    from gpu_operator.config import ConfigError

    with pytest.raises(ConfigError, match="derived from the pool"):
        parse_config(_doc({**T4, "labels": {OWNER: "x"}}))
