"""`gpu-operator diag` against the real API server: a healthy GPU stack, then one broken state at a time.

Three KWOK nodes of a pool of their own (`diag-gpu-0`, `diag-gpu-1` and the InfiniBand node `diag-ib-0`) carry the
labels the stack gives GPU nodes and a taint of their own, so no other test's DaemonSet lands on them; every
operand runs as a DaemonSet in the namespace `diag-e2e` with the operand's name, labels and init containers, and
KWOK runs their pods (init containers exit 0, so the validator reports every validation file ready). Each broken
state is made the way the cluster would show it - a pod's status patched to CrashLoopBackOff or not ready (the
DaemonSet controller then counts it unready), a node's allocatable GPUs patched to 0, MIG, upgrade and MOFED labels
set by their own field manager, the exporter's DaemonSet deleted - and put back afterwards. `diag` runs through
the CLI with a kubeconfig whose service account may only get and list; the audit log shows it asked for nothing
else. The crash-loop snapshot is saved and judged again offline (`--from`) to the same report.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import ConfigMap, Event, Namespace, Node, Pod, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding

from gpu_operator.cli import main
from tests.e2e.agents import service_account_token
from tests.e2e.apply import KindTable
from tests.e2e.control_plane import KWOK_ANNOTATION, ControlPlane, kubeconfig
from tests.e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

NS = "diag-e2e"
POOL_LABEL = ("diag.e2e/pool", "diag")
TAINT = {"key": "diag.e2e/only", "value": "true", "effect": "NoSchedule"}
NODES = ("diag-gpu-0", "diag-gpu-1", "diag-ib-0")
IB_NODE = "diag-ib-0"
ACCOUNT = "diag-reader"
#: app → (deploy label suffix, init containers, main container)
OPERANDS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "nvidia-driver-daemonset": ("driver", ("k8s-driver-manager",), "nvidia-driver-ctr"),
    "nvidia-container-toolkit-daemonset": ("container-toolkit", ("driver-validation",),
                                           "nvidia-container-toolkit-ctr"),
    "nvidia-operator-validator": ("operator-validator", ("driver-validation", "toolkit-validation",
                                                         "cuda-validation", "plugin-validation"),
                                  "nvidia-operator-validator"),
    "nvidia-device-plugin-daemonset": ("device-plugin", ("toolkit-validation",), "nvidia-device-plugin"),
    "nvidia-mig-manager": ("mig-manager", ("toolkit-validation",), "nvidia-mig-manager"),
    "gpu-feature-discovery": ("gpu-feature-discovery", ("toolkit-validation",), "gpu-feature-discovery"),
    "nvidia-dcgm-exporter": ("dcgm-exporter", ("toolkit-validation",), "nvidia-dcgm-exporter"),
}
MIG_CONFIG = "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
PLUGIN_CONFIG = ("version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n    resources:\n"
                 "      - name: nvidia.com/gpu\n        replicas: 2\n")
#: Read-only: what diag needs, get and list only.
READ_ONLY_RULES = [
    {"apiGroups": [""], "resources": ["nodes", "pods", "namespaces", "configmaps", "events"],
     "verbs": ["get", "list"]},
    {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get", "list"]},
    {"apiGroups": ["nvidia.com"], "resources": ["clusterpolicies"], "verbs": ["get", "list"]},
    {"apiGroups": ["mellanox.com"], "resources": ["nicclusterpolicies"], "verbs": ["get", "list"]},
]


def _node(name: str) -> dict[str, Any]:
    labels = {f"nvidia.com/gpu.deploy.{deploy}": "true" for deploy, _, _ in OPERANDS.values()}
    labels.update({
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok", POOL_LABEL[0]: POOL_LABEL[1],
        "nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "1",
        "nvidia.com/mig.config": "all-disabled", "nvidia.com/mig.config.state": "success",
        "nvidia.com/gpu-driver-upgrade-state": "upgrade-done",
    })
    if name == IB_NODE:
        labels.update({"feature.node.kubernetes.io/pci-15b3.present": "true",
                       "network.nvidia.com/operator.mofed.wait": "false"})
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]}},
            "spec": {"taints": [TAINT]}}


def _allocatable(name: str) -> dict[str, str]:
    resources = {"cpu": "96", "memory": "1800Gi", "pods": "110", "nvidia.com/gpu": "8"}
    if name == IB_NODE:
        resources["rdma/shared_ib"] = "63"
    return resources


def _daemonset(app: str) -> dict[str, Any]:
    deploy, inits, main_container = OPERANDS[app]
    container: dict[str, Any] = {"name": main_container, "image": f"registry.invalid/{app}:e2e"}
    volumes = []
    if app == "nvidia-device-plugin-daemonset":
        container["volumeMounts"] = [{"name": "available-configs", "mountPath": "/available-configs"}]
        volumes = [{"name": "available-configs", "configMap": {"name": "plugin-configs"}}]
    if app == "nvidia-mig-manager":
        container["env"] = [{"name": "CONFIG_FILE", "value": "/mig-parted-config/config.yaml"}]
        container["volumeMounts"] = [{"name": "mig-parted-config", "mountPath": "/mig-parted-config"}]
        volumes = [{"name": "mig-parted-config", "configMap": {"name": "default-mig-parted-config"}}]
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": app, "namespace": NS, "labels": {"app": app}},
        "spec": {
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {
                    "nodeSelector": {f"nvidia.com/gpu.deploy.{deploy}": "true", POOL_LABEL[0]: POOL_LABEL[1]},
                    "tolerations": [{"key": TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}],
                    "initContainers": [{"name": name, "image": "registry.invalid/validator:e2e"} for name in inits],
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def _all_ready(admin: Client) -> bool:
    for app in OPERANDS:
        status = admin.get(DaemonSet, app, namespace=NS).status
        if status is None or status.desiredNumberScheduled != len(NODES) or status.numberReady != len(NODES):
            return False
    return True


def _wait_healthy(admin: Client) -> None:
    wait_until(lambda: _all_ready(admin), timeout=90, what="every diag-e2e DaemonSet to have a ready pod per node")


@pytest.fixture(scope="module")
def stack(admin: Client, kinds: KindTable) -> Iterator[None]:
    """The nodes, namespace, ConfigMaps and operand DaemonSets of a healthy stack."""
    admin.create(Namespace.from_dict({"metadata": {"name": NS}}))
    for name in NODES:
        admin.create(Node.from_dict(_node(name)))
        admin.patch(Node.Status, name, {"status": {"capacity": _allocatable(name),
                                                   "allocatable": _allocatable(name)}})
    admin.create(ConfigMap.from_dict({"metadata": {"name": "plugin-configs", "namespace": NS},
                                      "data": {"shared": PLUGIN_CONFIG}}))
    admin.create(ConfigMap.from_dict({"metadata": {"name": "default-mig-parted-config", "namespace": NS},
                                      "data": {"config.yaml": MIG_CONFIG}}))
    for app in OPERANDS:
        admin.create(DaemonSet.from_dict(_daemonset(app)))
    try:
        _wait_healthy(admin)
        yield
    finally:
        admin.delete(Namespace, NS)
        for name in NODES:
            admin.delete(Node, name)


@pytest.fixture(scope="module")
def reader(admin: Client, control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig file for a service account that may only get and list what diag reads."""
    admin.create(ServiceAccount.from_dict({"metadata": {"name": ACCOUNT, "namespace": "default"}}))
    admin.create(ClusterRole.from_dict({"metadata": {"name": ACCOUNT}, "rules": READ_ONLY_RULES}))
    admin.create(ClusterRoleBinding.from_dict({
        "metadata": {"name": ACCOUNT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ACCOUNT},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": "default"}]}))
    token = service_account_token(admin, "default", ACCOUNT)
    path = tmp_path_factory.mktemp("diag") / "reader.kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig(control_plane.server, control_plane.ca_file, token)))
    return path


def _diag(reader: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    status = main(["diag", "--kubeconfig", str(reader), "-n", NS, "-l", "=".join(POOL_LABEL), "-o", "json",
                   *extra])
    captured = capsys.readouterr()
    assert captured.err == "", captured.err
    report = json.loads(captured.out)
    assert report["exitStatus"] == status
    return status, report


def _verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {entry["layer"]: entry["verdict"] for entry in report["layers"]}


def _checks(report: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(f["check"], f["layer"], f["subject"]) for f in report["findings"] if f["severity"] != "info"}


def _operand_pod(admin: Client, app: str, node: str) -> Pod:
    pods = [p for p in admin.list(Pod, namespace=NS, labels={"app": app}) if p.spec and p.spec.nodeName == node]
    assert len(pods) == 1, f"{app} on {node}: {[p.metadata.name for p in pods]}"
    return pods[0]


def _replace_pod(admin: Client, pod: Pod) -> None:
    """Delete a pod we broke; its DaemonSet makes a new one, which KWOK runs."""
    admin.delete(Pod, pod.metadata.name, namespace=NS, grace_period=0)
    _wait_healthy(admin)


def _label(admin: Client, node: str, label: str, value: str, manager: str) -> None:
    admin.patch(Node, node, {"metadata": {"labels": {label: value}}}, field_manager=manager)


def test_healthy_stack_every_layer_ok_and_validations_ready(
    admin: Client, stack: None, reader: Path, control_plane: ControlPlane, capsys: pytest.CaptureFixture[str]
) -> None:
    status, report = _diag(reader, capsys)
    assert status == 0, report["findings"]
    assert report["findings"] == []
    assert _verdicts(report) == {"operator": "ok", "driver": "ok", "toolkit": "ok", "device-plugin": "ok",
                                 "feature-discovery": "ok", "exporter": "ok", "network": "ok"}
    assert report["firstBroken"] is None and report["gpuNodes"] == len(NODES)
    assert report["validations"] == {node: {"driver-ready": "ready", "toolkit-ready": "ready",
                                            "cuda-ready": "ready", "plugin-ready": "ready"} for node in NODES}
    verbs = {event["verb"] for event in control_plane.audit_events(f"system:serviceaccount:default:{ACCOUNT}")}
    assert verbs and verbs <= {"get", "list"}, verbs


def test_driver_pod_in_crash_loop(
    admin: Client, stack: None, reader: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pod = _operand_pod(admin, "nvidia-driver-daemonset", NODES[0])
    name = pod.metadata.name
    admin.patch(Pod.Status, name, {"status": {
        "conditions": [{"type": "Ready", "status": "False"}, {"type": "ContainersReady", "status": "False"}],
        "containerStatuses": [{"name": "nvidia-driver-ctr", "image": "registry.invalid/nvidia-driver-daemonset:e2e",
                               "imageID": "", "ready": False, "restartCount": 6,
                               "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
                               "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}},
        namespace=NS)
    admin.create(Event.from_dict({
        "metadata": {"name": f"{name}.backoff", "namespace": NS}, "type": "Warning", "reason": "BackOff",
        "message": "Back-off restarting failed container nvidia-driver-ctr",
        "involvedObject": {"kind": "Pod", "name": name, "namespace": NS}}))
    wait_until(lambda: admin.get(DaemonSet, "nvidia-driver-daemonset", namespace=NS).status.numberReady == 2,
               timeout=30, what="the DaemonSet controller to count the crashing driver pod unready")
    try:
        saved = tmp_path / "driver-crash-loop.json"
        status, report = _diag(reader, capsys, "--save", str(saved))
        assert status == 4 and report["firstBroken"] == "driver"
        assert ("crash-loop", "driver", f"pod/{NS}/{name}") in _checks(report)
        assert main(["diag", "--from", str(saved), "-o", "json"]) == 4  # judged offline exactly as it was live
        assert json.loads(capsys.readouterr().out) == report
        crash = next(f for f in report["findings"] if f["check"] == "crash-loop")
        assert "6 restarts" in crash["what"] and "Back-off restarting failed container" in crash["what"]
        assert crash["next"] == f"kubectl logs -n {NS} {name} -c nvidia-driver-ctr --previous"
        assert ("daemonset-not-ready", "driver", f"daemonset/{NS}/nvidia-driver-daemonset") in _checks(report)
        assert {f["layer"] for f in report["findings"]} == {"driver"}
    finally:
        _replace_pod(admin, pod)


def test_toolkit_not_ready(admin: Client, stack: None, reader: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = _operand_pod(admin, "nvidia-container-toolkit-daemonset", NODES[1])
    admin.patch(Pod.Status, pod.metadata.name, {"status": {
        "conditions": [{"type": "Ready", "status": "False"}, {"type": "ContainersReady", "status": "False"}],
        "containerStatuses": [{"name": "nvidia-container-toolkit-ctr", "ready": False, "restartCount": 0,
                               "image": "registry.invalid/toolkit:e2e", "imageID": "",
                               "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}}, namespace=NS)
    try:
        status, report = _diag(reader, capsys)
        assert status == 4 and report["firstBroken"] == "toolkit"
        assert ("pod-not-ready", "toolkit", f"pod/{NS}/{pod.metadata.name}") in _checks(report)
        assert _verdicts(report)["driver"] == "ok"
    finally:
        _replace_pod(admin, pod)


def test_device_plugin_advertising_zero(
    admin: Client, stack: None, reader: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = NODES[0]
    admin.patch(Node.Status, node, {"status": {"allocatable": {"nvidia.com/gpu": "0"}}})
    try:
        status, report = _diag(reader, capsys)
        assert status == 4 and report["firstBroken"] == "device-plugin"
        assert _checks(report) == {("no-gpus-advertised", "device-plugin", f"node/{node}")}
    finally:
        admin.patch(Node.Status, node, {"status": {"allocatable": _allocatable(node)}})


def test_mig_state_failed(admin: Client, stack: None, reader: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node = NODES[1]
    _label(admin, node, "nvidia.com/mig.config.state", "failed", "nvidia-mig-manager")
    try:
        status, report = _diag(reader, capsys)
        assert status == 4 and report["firstBroken"] == "device-plugin"
        assert _checks(report) == {("mig-failed", "device-plugin", f"node/{node}")}
    finally:
        _label(admin, node, "nvidia.com/mig.config.state", "success", "nvidia-mig-manager")


def test_mig_pending_too_long(admin: Client, stack: None, reader: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node = NODES[0]
    _label(admin, node, "nvidia.com/mig.config.state", "pending", "nvidia-mig-manager")
    try:
        status, report = _diag(reader, capsys)  # default threshold: just changed, still in progress
        assert status == 0 and [f["check"] for f in report["findings"]] == ["mig-pending"]
        assert report["findings"][0]["severity"] == "info"
        time.sleep(2.5)  # managedFields times have one-second resolution
        status, report = _diag(reader, capsys, "--stuck-after", "1")
        assert status == 4 and report["firstBroken"] == "device-plugin"
        assert _checks(report) == {("mig-pending", "device-plugin", f"node/{node}")}
        assert "for at least" in report["findings"][0]["what"]
    finally:
        _label(admin, node, "nvidia.com/mig.config.state", "success", "nvidia-mig-manager")


def test_driver_upgrade_stuck(admin: Client, stack: None, reader: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node = NODES[1]
    _label(admin, node, "nvidia.com/gpu-driver-upgrade-state", "drain-required", "gpu-operator")
    try:
        time.sleep(2.5)
        status, report = _diag(reader, capsys, "--stuck-after", "1")
        assert status == 4 and report["firstBroken"] == "driver"
        assert _checks(report) == {("upgrade-stuck", "driver", f"node/{node}")}
    finally:
        _label(admin, node, "nvidia.com/gpu-driver-upgrade-state", "upgrade-done", "gpu-operator")


def test_mofed_not_ready(admin: Client, stack: None, reader: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _label(admin, IB_NODE, "network.nvidia.com/operator.mofed.wait", "true", "network-operator")
    try:
        status, report = _diag(reader, capsys)
        assert status == 4 and report["firstBroken"] == "network"
        assert _checks(report) == {("mofed-not-ready", "network", f"node/{IB_NODE}")}
    finally:
        _label(admin, IB_NODE, "network.nvidia.com/operator.mofed.wait", "false", "network-operator")


def test_rdma_advertised_zero(admin: Client, stack: None, reader: Path, capsys: pytest.CaptureFixture[str]) -> None:
    admin.patch(Node.Status, IB_NODE, {"status": {"allocatable": {"rdma/shared_ib": "0"}}})
    try:
        status, report = _diag(reader, capsys)
        assert status == 4 and report["firstBroken"] == "network"
        assert _checks(report) == {("rdma-not-advertised", "network", f"node/{IB_NODE}")}
    finally:
        admin.patch(Node.Status, IB_NODE, {"status": {"allocatable": _allocatable(IB_NODE)}})


def test_exporter_missing(admin: Client, stack: None, reader: Path, capsys: pytest.CaptureFixture[str]) -> None:
    admin.delete(DaemonSet, "nvidia-dcgm-exporter", namespace=NS)
    wait_until(lambda: not list(admin.list(Pod, namespace=NS, labels={"app": "nvidia-dcgm-exporter"})),
               timeout=60, what="the garbage collector to remove the exporter's pods")
    try:
        status, report = _diag(reader, capsys)
        assert status == 4 and report["firstBroken"] == "exporter"
        assert _checks(report) == {("operand-missing", "exporter", f"daemonset/{NS}/nvidia-dcgm-exporter")}
        assert all(node in report["findings"][0]["what"] for node in NODES)
    finally:
        admin.create(DaemonSet.from_dict(_daemonset("nvidia-dcgm-exporter")))
        _wait_healthy(admin)


def test_text_report_and_bad_input(
    admin: Client, stack: None, reader: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    capsys.readouterr()
    assert main(["diag", "--kubeconfig", str(reader), "-n", NS, "-l", "=".join(POOL_LABEL)]) == 0
    out = capsys.readouterr().out
    assert "no broken layer" in out and f"{NODES[0]}: driver-ready ready" in out
    assert main(["diag", "--kubeconfig", str(reader), "-n", "no-such-namespace"]) == 2
    assert "has no namespace 'no-such-namespace'" in capsys.readouterr().err
    assert main(["diag", "--kubeconfig", str(tmp_path / "missing")]) == 2
    assert "no such kubeconfig file" in capsys.readouterr().err
