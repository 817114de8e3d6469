"""Every check of `diag` on the healthy fixture and on one broken state each: the check that fires, its layer and
severity, the object it names, and the verdicts that follow (the first broken layer)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from gpu_operator.diag import Layer, Severity, Thresholds, Verdict, diagnose
from tests.diag.cluster import IB_NODE, NOW, NS, cluster, daemonset, find, managed_label, node, set_container_state
from tests.diag.cluster import snapshot

Change = Callable[[dict[str, Any]], None]


def _pod(objects: dict[str, Any], app: str, node_name: str = "gpu-0") -> dict[str, Any]:
    return find(objects["pods"], f"{app}-{node_name}")


def _label(node_name: str, label: str, value: str | None, changed: timedelta | None = None) -> Change:
    def change(objects: dict[str, Any]) -> None:
        target = find(objects["nodes"], node_name)
        if value is None:
            target["metadata"]["labels"].pop(label, None)
        else:
            target["metadata"]["labels"][label] = value
        if changed is not None:
            target["metadata"]["managedFields"] = [managed_label(label, NOW - changed)]
    return change


def crash_loop(objects: dict[str, Any]) -> None:
    driver = _pod(objects, "nvidia-driver-daemonset")
    set_container_state(driver, "nvidia-driver-ctr", {"waiting": {"reason": "CrashLoopBackOff"}}, restarts=7,
                        last={"terminated": {"exitCode": 1, "reason": "Error"}})
    find(objects["daemonsets"], "nvidia-driver-daemonset")["status"]["numberReady"] = 2


def image_pull(objects: dict[str, Any]) -> None:
    exporter = _pod(objects, "nvidia-dcgm-exporter")
    set_container_state(exporter, "nvidia-dcgm-exporter",
                        {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}})


def create_error(objects: dict[str, Any]) -> None:
    gfd = _pod(objects, "gpu-feature-discovery")
    set_container_state(gfd, "gpu-feature-discovery",
                        {"waiting": {"reason": "CreateContainerConfigError", "message": "configmap missing"}})


def init_stuck(held: timedelta) -> Change:
    def change(objects: dict[str, Any]) -> None:
        plugin = _pod(objects, "nvidia-device-plugin-daemonset")
        plugin["status"]["phase"] = "Pending"
        plugin["status"]["startTime"] = (NOW - held).strftime("%Y-%m-%dT%H:%M:%SZ")
        set_container_state(plugin, "toolkit-validation", {"running": {}})
        set_container_state(plugin, "nvidia-device-plugin", {"waiting": {"reason": "PodInitializing"}})
    return change


def toolkit_not_ready(objects: dict[str, Any]) -> None:
    set_container_state(_pod(objects, "nvidia-container-toolkit-daemonset"), "nvidia-container-toolkit-ctr",
                        {"running": {}})
    find(objects["daemonsets"], "nvidia-container-toolkit-daemonset")["status"]["numberReady"] = 2


def unschedulable(objects: dict[str, Any]) -> None:
    driver = _pod(objects, "nvidia-driver-daemonset")
    driver["spec"].pop("nodeName")
    driver["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/4 nodes are available"}]}


def failed(objects: dict[str, Any]) -> None:
    _pod(objects, "nvidia-dcgm-exporter")["status"].update({"phase": "Failed", "reason": "Evicted",
                                                           "message": "low on memory"})


def validator_stuck_in_driver(objects: dict[str, Any]) -> None:
    validator = _pod(objects, "nvidia-operator-validator")
    validator["status"]["phase"] = "Pending"
    for container in ("driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation"):
        set_container_state(validator, container, {"waiting": {"reason": "PodInitializing"}})
    set_container_state(validator, "driver-validation", {"running": {}})


def daemonset_short(objects: dict[str, Any]) -> None:
    find(objects["daemonsets"], "gpu-feature-discovery")["status"]["numberReady"] = 1


def exporter_missing(objects: dict[str, Any]) -> None:
    objects["daemonsets"] = [d for d in objects["daemonsets"] if d["metadata"]["name"] != "nvidia-dcgm-exporter"]
    objects["pods"] = [p for p in objects["pods"] if p["metadata"]["labels"]["app"] != "nvidia-dcgm-exporter"]


def exporter_off_one_node(objects: dict[str, Any]) -> None:
    objects["pods"].remove(_pod(objects, "nvidia-dcgm-exporter", "gpu-1"))


def policy_enables_exporter(objects: dict[str, Any]) -> None:
    exporter_missing(objects)
    for target in objects["nodes"]:
        target["metadata"]["labels"].pop("nvidia.com/gpu.deploy.dcgm-exporter", None)
    objects["cluster_policy"] = {"metadata": {"name": "cluster-policy"},
                                 "spec": {"dcgmExporter": {}, "dcgm": {"enabled": False}}, "status": {"state": "ready"}}


def policy_not_ready(objects: dict[str, Any]) -> None:
    objects["cluster_policy"] = {"metadata": {"name": "cluster-policy"}, "spec": {"dcgm": {"enabled": False}},
                                 "status": {"state": "notReady"}}


def nfd_without_present(objects: dict[str, Any]) -> None:
    objects["nodes"].append(node("new-0", gpus=None, extra={"feature.node.kubernetes.io/pci-10de.present": "true"}))


def gpus_undetected(objects: dict[str, Any]) -> None:
    bare = node("bare-0", gpus=None)
    bare["status"]["capacity"]["nvidia.com/gpu"] = "8"
    objects["nodes"].append(bare)


def allocatable(value: str | None) -> Change:
    def change(objects: dict[str, Any]) -> None:
        resources = find(objects["nodes"], "gpu-0")["status"]["allocatable"]
        if value is None:
            resources.pop("nvidia.com/gpu")
        else:
            resources["nvidia.com/gpu"] = value
    return change


def mig_paused_after_success(objects: dict[str, Any]) -> None:
    _label("gpu-0", "nvidia.com/gpu.deploy.device-plugin", "paused-for-mig-change")(objects)


def mig_unknown_layout(objects: dict[str, Any]) -> None:
    _label("gpu-0", "nvidia.com/mig.config", "all-3g.40gb")(objects)


def upgrade_paused(objects: dict[str, Any]) -> None:
    _label("gpu-0", "nvidia.com/gpu.deploy.driver", "paused-for-driver-upgrade")(objects)


def mofed_waiting(objects: dict[str, Any]) -> None:
    _label(IB_NODE, "network.nvidia.com/operator.mofed.wait", "true", timedelta(minutes=25))(objects)


def rdma_zero(objects: dict[str, Any]) -> None:
    find(objects["nodes"], IB_NODE)["status"]["allocatable"]["rdma/shared_ib"] = "0"


def nic_policy_not_ready(objects: dict[str, Any]) -> None:
    objects["nic_cluster_policy"]["status"]["state"] = "notReady"


def mofed_unlabelled(objects: dict[str, Any]) -> None:
    objects["nic_cluster_policy"]["spec"]["ofedDriver"] = {"image": "doca-driver"}
    _label(IB_NODE, "network.nvidia.com/operator.mofed.wait", None)(objects)


def _gpu_pod(message: str, phase: str = "Pending", reason: str | None = None) -> Change:
    def change(objects: dict[str, Any]) -> None:
        status: dict[str, Any] = {"phase": phase}
        if phase == "Pending":
            status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                     "message": message}]
        else:
            status.update({"reason": reason, "message": message})
        objects["gpu_pods"].append({
            "metadata": {"name": "trainer", "namespace": "ml"},
            "spec": {"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            "status": status})
    return change


def pending_event_only(objects: dict[str, Any]) -> None:
    objects["gpu_pods"].append({"metadata": {"name": "trainer", "namespace": "ml"},
                                "spec": {"containers": [{"name": "t", "resources": {"limits": {"rdma/shared_ib": 1}}}]},
                                "status": {"phase": "Pending"}})
    objects["events"].append({"type": "Warning", "reason": "FailedScheduling",
                              "involvedObject": {"kind": "Pod", "name": "trainer", "namespace": "ml"},
                              "message": "0/4 nodes are available: 4 Insufficient rdma/shared_ib."})


def plugin_config(key: str, text: str | None) -> Change:
    def change(objects: dict[str, Any]) -> None:
        data = find(objects["config_maps"], "plugin-configs")["data"]
        if text is None:
            data.pop(key)
        else:
            data[key] = text
    return change


def plugin_config_map_missing(objects: dict[str, Any]) -> None:
    objects["config_maps"] = [c for c in objects["config_maps"] if c["metadata"]["name"] != "plugin-configs"]


@dataclass(frozen=True)
class Case:
    name: str
    change: Change
    check: str
    layer: Layer
    severity: Severity
    subject: str


CASES = [
    Case("driver pod crash loop", crash_loop, "crash-loop", Layer.DRIVER, Severity.ERROR,
         f"pod/{NS}/nvidia-driver-daemonset-gpu-0"),
    Case("exporter image pull", image_pull, "image-pull", Layer.EXPORTER, Severity.ERROR,
         f"pod/{NS}/nvidia-dcgm-exporter-gpu-0"),
    Case("gfd container config", create_error, "container-not-created", Layer.FEATURE_DISCOVERY, Severity.ERROR,
         f"pod/{NS}/gpu-feature-discovery-gpu-0"),
    Case("plugin stuck in toolkit-validation", init_stuck(timedelta(minutes=30)), "init-stuck", Layer.TOOLKIT,
         Severity.ERROR, f"pod/{NS}/nvidia-device-plugin-daemonset-gpu-0"),
    Case("plugin starting", init_stuck(timedelta(minutes=2)), "init-stuck", Layer.TOOLKIT, Severity.INFO,
         f"pod/{NS}/nvidia-device-plugin-daemonset-gpu-0"),
    Case("validator stuck in driver-validation", validator_stuck_in_driver, "init-stuck", Layer.DRIVER,
         Severity.ERROR, f"pod/{NS}/nvidia-operator-validator-gpu-0"),
    Case("toolkit not ready", toolkit_not_ready, "pod-not-ready", Layer.TOOLKIT, Severity.ERROR,
         f"pod/{NS}/nvidia-container-toolkit-daemonset-gpu-0"),
    Case("driver unschedulable", unschedulable, "pod-unschedulable", Layer.DRIVER, Severity.ERROR,
         f"pod/{NS}/nvidia-driver-daemonset-gpu-0"),
    Case("exporter evicted", failed, "pod-failed", Layer.EXPORTER, Severity.ERROR,
         f"pod/{NS}/nvidia-dcgm-exporter-gpu-0"),
    Case("gfd daemonset short", daemonset_short, "daemonset-not-ready", Layer.FEATURE_DISCOVERY, Severity.ERROR,
         f"daemonset/{NS}/gpu-feature-discovery"),
    Case("exporter missing", exporter_missing, "operand-missing", Layer.EXPORTER, Severity.ERROR,
         f"daemonset/{NS}/nvidia-dcgm-exporter"),
    Case("exporter missing, policy enables it", policy_enables_exporter, "operand-missing", Layer.EXPORTER,
         Severity.ERROR, f"daemonset/{NS}/nvidia-dcgm-exporter"),
    Case("exporter not on a labelled node", exporter_off_one_node, "operand-not-on-node", Layer.EXPORTER,
         Severity.ERROR, "node/gpu-1"),
    Case("cluster policy not ready", policy_not_ready, "clusterpolicy-not-ready", Layer.OPERATOR, Severity.WARNING,
         "clusterpolicy/cluster-policy"),
    Case("nfd label without gpu.present", nfd_without_present, "gpu-not-labelled", Layer.OPERATOR, Severity.ERROR,
         "node/new-0"),
    Case("gpu capacity, no detection", gpus_undetected, "gpu-not-detected", Layer.FEATURE_DISCOVERY,
         Severity.WARNING, "node/bare-0"),
    Case("device plugin advertises 0", allocatable("0"), "no-gpus-advertised", Layer.DEVICE_PLUGIN, Severity.ERROR,
         "node/gpu-0"),
    Case("device plugin advertises nothing", allocatable(None), "no-gpus-advertised", Layer.DEVICE_PLUGIN,
         Severity.ERROR, "node/gpu-0"),
    Case("device plugin advertises fewer", allocatable("6"), "gpus-advertised-mismatch", Layer.DEVICE_PLUGIN,
         Severity.WARNING, "node/gpu-0"),
    Case("MIG failed", _label("gpu-0", "nvidia.com/mig.config.state", "failed"), "mig-failed",
         Layer.DEVICE_PLUGIN, Severity.ERROR, "node/gpu-0"),
    Case("MIG pending too long", _label("gpu-0", "nvidia.com/mig.config.state", "pending", timedelta(hours=1)),
         "mig-pending", Layer.DEVICE_PLUGIN, Severity.ERROR, "node/gpu-0"),
    Case("MIG pending a while", _label("gpu-0", "nvidia.com/mig.config.state", "pending", timedelta(minutes=3)),
         "mig-pending", Layer.DEVICE_PLUGIN, Severity.INFO, "node/gpu-0"),
    Case("MIG rebooting, no time", lambda o: (_label("gpu-0", "nvidia.com/mig.config.state", "rebooting")(o),
                                             find(o["nodes"], "gpu-0")["metadata"].update(managedFields=[])),
         "mig-pending", Layer.DEVICE_PLUGIN, Severity.WARNING, "node/gpu-0"),
    Case("MIG layout unknown", mig_unknown_layout, "mig-layout-unknown", Layer.DEVICE_PLUGIN, Severity.ERROR,
         "node/gpu-0"),
    Case("MIG paused after success", mig_paused_after_success, "mig-paused-after-success", Layer.DEVICE_PLUGIN,
         Severity.WARNING, "node/gpu-0"),
    Case("upgrade failed", _label("gpu-1", "nvidia.com/gpu-driver-upgrade-state", "upgrade-failed"),
         "upgrade-failed", Layer.DRIVER, Severity.ERROR, "node/gpu-1"),
    Case("upgrade stuck", _label("gpu-1", "nvidia.com/gpu-driver-upgrade-state", "drain-required",
                                 timedelta(hours=2)), "upgrade-stuck", Layer.DRIVER, Severity.ERROR, "node/gpu-1"),
    Case("upgrade in progress", _label("gpu-1", "nvidia.com/gpu-driver-upgrade-state", "drain-required",
                                       timedelta(minutes=5)), "upgrade-stuck", Layer.DRIVER, Severity.INFO,
         "node/gpu-1"),
    Case("paused after upgrade", upgrade_paused, "upgrade-paused-after-done", Layer.DRIVER, Severity.WARNING,
         "node/gpu-0"),
    Case("MOFED not ready", mofed_waiting, "mofed-not-ready", Layer.NETWORK, Severity.ERROR, f"node/{IB_NODE}"),
    Case("MOFED not labelled yet", mofed_unlabelled, "mofed-unlabelled", Layer.NETWORK, Severity.WARNING,
         f"node/{IB_NODE}"),
    Case("RDMA advertised 0", rdma_zero, "rdma-not-advertised", Layer.NETWORK, Severity.ERROR, f"node/{IB_NODE}"),
    Case("NicClusterPolicy not ready", nic_policy_not_ready, "nicclusterpolicy-not-ready", Layer.NETWORK,
         Severity.WARNING, "nicclusterpolicy/nic-cluster-policy"),
    Case("GPU pod pending: insufficient GPUs", _gpu_pod("0/4 nodes are available: 4 Insufficient nvidia.com/gpu."),
         "gpu-pod-pending", Layer.DEVICE_PLUGIN, Severity.WARNING, "pod/ml/trainer"),
    Case("GPU pod pending: taint", _gpu_pod("0/4 nodes are available: 4 node(s) had untolerated taint"),
         "gpu-pod-pending", Layer.DEVICE_PLUGIN, Severity.INFO, "pod/ml/trainer"),
    Case("RDMA pod pending (from its event)", pending_event_only, "gpu-pod-pending", Layer.NETWORK,
         Severity.WARNING, "pod/ml/trainer"),
    Case("GPU pod rejected at admission", _gpu_pod("Allocate failed", "Failed", "UnexpectedAdmissionError"),
         "gpu-pod-rejected", Layer.DEVICE_PLUGIN, Severity.WARNING, "pod/ml/trainer"),
    Case("sharing without failRequestsGreaterThanOne",
         plugin_config("shared", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                                 "      - {name: nvidia.com/gpu, replicas: 4}\n"),
         "sharing-without-fail-requests", Layer.DEVICE_PLUGIN, Severity.WARNING, f"configmap/{NS}/plugin-configs"),
    Case("sharing config invalid", plugin_config("broken", "sharing: [\n"), "plugin-config-invalid",
         Layer.DEVICE_PLUGIN, Severity.ERROR, f"configmap/{NS}/plugin-configs"),
    Case("node names an unknown sharing config", _label("gpu-1", "nvidia.com/device-plugin.config", "nope"),
         "plugin-config-unknown", Layer.DEVICE_PLUGIN, Severity.ERROR, "node/gpu-1"),
    Case("sharing ConfigMap missing", plugin_config_map_missing, "plugin-config-missing", Layer.DEVICE_PLUGIN,
         Severity.ERROR, f"configmap/{NS}/plugin-configs"),
]


def test_the_healthy_cluster_has_no_findings_and_every_layer_ok() -> None:
    diagnosis = diagnose(snapshot())
    assert diagnosis.findings == ()
    assert [(v.layer, v.verdict) for v in diagnosis.verdicts] == [(layer, Verdict.OK) for layer in Layer]
    assert diagnosis.first_broken is None and diagnosis.exit_status == 0
    assert diagnosis.validations["gpu-0"] == {"driver-ready": "ready", "toolkit-ready": "ready",
                                              "cuda-ready": "ready", "plugin-ready": "ready"}


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_broken_state_is_found_in_its_layer(case: Case) -> None:
    diagnosis = diagnose(snapshot(case.change))
    found = [f for f in diagnosis.findings if f.check == case.check]
    assert [(f.layer, f.severity, f.subject) for f in found] == [(case.layer, case.severity, case.subject)], \
        "\n".join(map(str, diagnosis.findings))
    assert found[0].what and found[0].next
    verdict = {v.layer: v.verdict for v in diagnosis.verdicts}[case.layer]
    expected = {Severity.ERROR: Verdict.BROKEN, Severity.WARNING: Verdict.DEGRADED, Severity.INFO: Verdict.OK}
    assert verdict is expected[case.severity]
    assert diagnosis.exit_status == {Severity.ERROR: 4, Severity.WARNING: 3, Severity.INFO: 0}[case.severity]


def test_every_check_has_a_case() -> None:
    """A check added without a broken fixture fails here."""
    import inspect

    import gpu_operator.diag as package
    from gpu_operator.diag import diagnosis, nodes, operands, workloads

    sources = "".join(inspect.getsource(m) for m in (diagnosis, nodes, operands, workloads))
    import re

    checks = set(re.findall(r'Finding\(\s*"([a-z0-9-]+)"', sources)) | set(re.findall(r'finding\("([a-z0-9-]+)"',
                                                                                       sources))
    checks |= set(re.findall(r'_stuck\("([a-z0-9-]+)"', sources))
    assert package and checks and checks <= {case.check for case in CASES}, checks - {case.check for case in CASES}


def test_crash_loop_names_the_previous_logs_and_the_last_exit() -> None:
    (finding,) = [f for f in diagnose(snapshot(crash_loop)).findings if f.check == "crash-loop"]
    assert "7 restarts" in finding.what and "exit code 1" in finding.what
    assert finding.next == f"kubectl logs -n {NS} nvidia-driver-daemonset-gpu-0 -c nvidia-driver-ctr --previous"


def test_the_first_broken_layer_is_the_earliest_in_the_chain() -> None:
    def both(objects: dict[str, Any]) -> None:
        image_pull(objects)
        crash_loop(objects)

    diagnosis = diagnose(snapshot(both))
    assert diagnosis.first_broken is Layer.DRIVER
    broken = [v.layer for v in diagnosis.verdicts if v.verdict is Verdict.BROKEN]
    assert broken == [Layer.DRIVER, Layer.EXPORTER]


def test_a_held_state_uses_the_latest_manager_time_and_the_threshold_decides() -> None:
    def change(objects: dict[str, Any]) -> None:
        _label("gpu-0", "nvidia.com/mig.config.state", "pending")(objects)
        find(objects["nodes"], "gpu-0")["metadata"]["managedFields"] = [
            managed_label("nvidia.com/mig.config.state", NOW - timedelta(hours=1), "nfd"),
            managed_label("nvidia.com/mig.config.state", NOW - timedelta(minutes=3), "mig-manager"),
            managed_label("nvidia.com/gpu.count", NOW - timedelta(seconds=5), "gfd"),
        ]

    relaxed = diagnose(snapshot(change))
    strict = diagnose(snapshot(change), Thresholds.all(60))
    assert [f.severity for f in relaxed.findings] == [Severity.INFO]
    assert [f.severity for f in strict.findings] == [Severity.ERROR]
    assert "at least 3m" in strict.findings[0].what


def test_validations_read_from_the_validator_init_containers() -> None:
    diagnosis = diagnose(snapshot(validator_stuck_in_driver))
    assert diagnosis.validations["gpu-0"] == {"driver-ready": "pending", "toolkit-ready": "pending",
                                              "cuda-ready": "pending", "plugin-ready": "pending"}

    def crashed(objects: dict[str, Any]) -> None:
        set_container_state(_pod(objects, "nvidia-operator-validator"), "cuda-validation",
                            {"waiting": {"reason": "CrashLoopBackOff"}}, restarts=3)

    diagnosis = diagnose(snapshot(crashed))
    assert diagnosis.validations["gpu-0"]["cuda-ready"] == "failed"
    assert [(f.check, f.layer) for f in diagnosis.findings if f.subject.endswith("validator-gpu-0")] == \
        [("crash-loop", Layer.TOOLKIT)]


def test_layers_without_operands_are_not_deployed() -> None:
    def bare(objects: dict[str, Any]) -> None:
        objects.update(nodes=[node("cpu-0", gpus=None)], pods=[], daemonsets=[], nic_cluster_policy=None)

    diagnosis = diagnose(snapshot(bare))
    assert {v.verdict for v in diagnosis.verdicts} == {Verdict.NOT_DEPLOYED}
    assert diagnosis.exit_status == 0


def test_mixed_mig_counts_mig_devices_as_advertised() -> None:
    def mixed(objects: dict[str, Any]) -> None:
        target = find(objects["nodes"], "gpu-0")
        target["metadata"]["labels"]["nvidia.com/mig.config"] = "all-1g.10gb"
        target["status"]["allocatable"].pop("nvidia.com/gpu")
        target["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "56"

    assert diagnose(snapshot(mixed)).findings == ()


def test_time_sliced_gpus_are_expected_times_their_replicas() -> None:
    def shared(objects: dict[str, Any]) -> None:
        target = find(objects["nodes"], "gpu-0")
        target["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "4"
        target["status"]["allocatable"]["nvidia.com/gpu"] = "32"

    assert diagnose(snapshot(shared)).findings == ()


def test_fixture_is_not_shared_between_snapshots() -> None:
    snapshot(crash_loop)
    assert json.dumps(cluster(), sort_keys=True) == json.dumps(cluster(), sort_keys=True)
    assert diagnose(snapshot()).findings == ()


def test_a_new_daemonset_counts_its_layer_as_deployed() -> None:
    def only_driver(objects: dict[str, Any]) -> None:
        objects.update(daemonsets=[daemonset("nvidia-driver-daemonset", 0)], pods=[], nic_cluster_policy=None,
                       nodes=[node("cpu-0", gpus=None)])

    verdicts = {v.layer: v.verdict for v in diagnose(snapshot(only_driver)).verdicts}
    assert verdicts[Layer.DRIVER] is Verdict.OK and verdicts[Layer.TOOLKIT] is Verdict.NOT_DEPLOYED


def test_a_pod_being_deleted_is_not_judged() -> None:
    def terminating(objects: dict[str, Any]) -> None:
        crash_loop(objects)
        find(objects["daemonsets"], "nvidia-driver-daemonset")["status"]["numberReady"] = 3
        _pod(objects, "nvidia-driver-daemonset")["metadata"]["deletionTimestamp"] = "2026-11-23T11:59:00Z"

    assert diagnose(snapshot(terminating)).findings == ()


def test_nvidia_driver_resources_are_found_by_their_component_label() -> None:
    def driver_crd(objects: dict[str, Any]) -> None:
        crash_loop(objects)
        driver = find(objects["daemonsets"], "nvidia-driver-daemonset")
        driver["metadata"]["name"] = "nvidia-gpu-driver-ubuntu22.04-7c6d7bd8b"
        driver["spec"]["template"]["metadata"]["labels"] = {"app.kubernetes.io/component": "nvidia-driver"}
        for pod in objects["pods"]:
            if pod["metadata"]["labels"]["app"] == "nvidia-driver-daemonset":
                pod["metadata"]["labels"] = {"app.kubernetes.io/component": "nvidia-driver"}

    diagnosis = diagnose(snapshot(driver_crd))
    assert {(f.check, f.layer) for f in diagnosis.findings} == {("crash-loop", Layer.DRIVER),
                                                                 ("daemonset-not-ready", Layer.DRIVER)}
    assert diagnosis.first_broken is Layer.DRIVER


@pytest.mark.parametrize(("pod_labels", "layer"), [
    ({"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"}, Layer.OPERATOR),
    ({"app.kubernetes.io/name": "node-feature-discovery", "role": "worker"}, Layer.FEATURE_DISCOVERY),
])
def test_controller_and_nfd_pods_are_checked_in_their_layers(pod_labels: dict[str, str], layer: Layer) -> None:
    def add(objects: dict[str, Any]) -> None:
        extra = copy.deepcopy(_pod(objects, "nvidia-dcgm-exporter"))
        extra["metadata"].update(name="extra", labels=pod_labels)
        set_container_state(extra, "nvidia-dcgm-exporter", {"waiting": {"reason": "CrashLoopBackOff"}}, restarts=2)
        objects["pods"].append(extra)

    diagnosis = diagnose(snapshot(add))
    assert [(f.check, f.layer, f.subject) for f in diagnosis.findings] == [("crash-loop", layer, f"pod/{NS}/extra")]
    assert diagnosis.first_broken is layer


@pytest.mark.parametrize(("policy_spec", "expected"), [
    ({"dcgmExporter": {"enabled": False}}, set()),  # the operator labels every node for it anyway
    ({}, {("operand-missing", Layer.EXPORTER)}),  # enabled by the CRD's default
    ({"dcgmExporter": {"enabled": True}}, {("operand-missing", Layer.EXPORTER)}),
])
def test_with_a_cluster_policy_an_operand_it_turns_off_is_expected_nowhere(
    policy_spec: dict[str, Any], expected: set[tuple[str, Layer]]
) -> None:
    def change(objects: dict[str, Any]) -> None:
        exporter_missing(objects)
        for target in objects["nodes"]:
            if "nvidia.com/gpu.present" in target["metadata"]["labels"]:
                target["metadata"]["labels"].update({"nvidia.com/gpu.deploy.dcgm": "true",
                                                     "nvidia.com/gpu.deploy.node-status-exporter": "true"})
        objects["cluster_policy"] = {"metadata": {"name": "cluster-policy"}, "spec": policy_spec,
                                     "status": {"state": "ready"}}

    findings = diagnose(snapshot(change)).findings
    # dcgm is on by the CRD's default and labelled, but has no DaemonSet in the fixture: found as well
    assert {(f.check, f.layer) for f in findings if "dcgm-exporter" in f.subject} == expected
    assert [f.subject for f in findings if "node-status-exporter" in f.subject] == []  # off by the CRD's default
