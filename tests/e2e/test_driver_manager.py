"""The driver manager agent against the real API server, on KWOK nodes, with the driver's rendered RBAC.

The config is rendered with our driver manager in the driver pod (it is not shipped yet, so the test lets the
render pick it as a shipped agent would be), into a namespace of its own. Only the driver's ServiceAccount,
ClusterRole and ClusterRoleBinding are applied; the two cluster-scoped objects get a name of this module's (the
fleet tests apply NVIDIA's `nvidia-driver` role) and keep the rendered rules. Then, per case, a KWOK node with the
operands' deploy labels, an operand DaemonSet selecting `nvidia.com/gpu.deploy.device-plugin=true`, and GPU pods
from a ReplicaSet; the agent runs as a local process as the init container would (the rendered env, a token of the
driver's ServiceAccount) with a host root of its own: a directory with /proc/modules and the driver's state file,
and `rmmod`/`umount`/`chroot` on PATH acting on that directory. Cases:

- fresh install (no module loaded): exit 0, no label touched, no eviction;
- upgrade with GPU pods: the operands paused while it runs and restored, the GPU pods evicted, the modules
  unloaded, the node uncordoned;
- the loaded driver has the rendered config digest: exit 0, no cordon, no eviction, the GPU pods untouched;
- a PodDisruptionBudget blocks the eviction: exit 1 once DRAIN_TIMEOUT_SECONDS has passed, labels restored,
  node uncordoned, pods untouched.

In every case the API server refused none of the agent's requests.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx2
import pytest
import yaml
from lightkube import Client
from lightkube.resources.apps_v1 import DaemonSet, ReplicaSet
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.policy_v1 import PodDisruptionBudget
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding

from gpu_operator.config import agents as agents_config
from gpu_operator.config import parse_config
from gpu_operator.render import render
from tests.e2e.agents import container, daemonset, rendered_env, run_agent, service_account_token
from tests.e2e.apply import KindTable, ensure_namespaces, server_side_apply
from tests.e2e.control_plane import KWOK_ANNOTATION, ControlPlane
from tests.e2e.nodes import FLEET_CONFIG
from tests.e2e.rbac import audited_requests, forbidden
from tests.e2e.report import note
from tests.e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

Object = dict[str, Any]
NAMESPACE = "gpu-driver-e2e"
ACCOUNT = "nvidia-driver"
ROLE = "nvidia-driver-dm-e2e"
PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
DEPLOY = {
    "nvidia.com/gpu.deploy.driver": "true",
    PLUGIN: "true",
    "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
    "nvidia.com/gpu.deploy.dcgm-exporter": "false",
}
#: Only this module's nodes carry it, so its stand-in operand lands on no fleet node.
OWN_NODE = {"e2e.pulumi-gpu-operator/driver-manager": "true"}
LOADED = "nvidia_uvm 1540096 0 - Live 0x0\nnvidia_modeset 1306624 0 - Live 0x0\nnvidia 56799232 2 - Live 0x0\n"
#: Host commands the agent runs, played on the fake host root ($DRIVER_MANAGER_ROOT): rmmod drops the module's line.
FAKE_COMMANDS = {
    "rmmod": '#!/bin/sh\nset -e\nf="$DRIVER_MANAGER_ROOT/proc/modules"\ngrep -v "^$1 " "$f" > "$f.new" || true\n'
             'mv "$f.new" "$f"\n',
    "umount": "#!/bin/sh\nexit 0\n",
    "chroot": '#!/bin/sh\necho "chroot: failed to run command nvidia-smi: No such file or directory" >&2\nexit 127\n',
}


@pytest.fixture(scope="module")
def rendered() -> Iterator[list[Object]]:
    document = yaml.safe_load(FLEET_CONFIG.read_text())
    document["namespace"] = NAMESPACE
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(agents_config, "SHIPPED_AGENTS", agents_config.SHIPPED_AGENTS | {"driverManager"})
        yield render(parse_config(document))


def _driver_rbac(rendered: list[Object]) -> list[Object]:
    found = {(o["kind"], o["metadata"]["name"]): o for o in rendered}
    account = found[("ServiceAccount", ACCOUNT)]
    role = {**found[("ClusterRole", ACCOUNT)], "metadata": {"name": ROLE}}
    binding = found[("ClusterRoleBinding", ACCOUNT)]
    binding = {**binding, "metadata": {"name": ROLE}, "roleRef": {**binding["roleRef"], "name": ROLE}}
    return [account, role, binding]


@pytest.fixture(scope="module")
def applied(admin: Client, rendered: list[Object]) -> Iterator[list[Object]]:
    objects = _driver_rbac(rendered)
    table = KindTable()
    table.learn(objects)
    ensure_namespaces(admin, objects)
    failures = server_side_apply(admin, objects, table, dry_run=False, field_manager="e2e-driver-manager")
    assert not failures, "the API server refused:\n" + "\n".join(map(str, failures))
    operand = _operand_daemonset()
    admin.apply(DaemonSet.from_dict(operand), field_manager="e2e-driver-manager", force=True)
    yield objects
    admin.delete(DaemonSet, operand["metadata"]["name"], namespace=NAMESPACE)
    admin.delete(ClusterRoleBinding, ROLE)
    admin.delete(ClusterRole, ROLE)


def _operand_daemonset() -> Object:
    """A stand-in for the device plugin: a DaemonSet selecting the node by its deploy label."""
    labels = {"app": "nvidia-device-plugin-daemonset"}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": NAMESPACE},
        "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
            "nodeSelector": {PLUGIN: "true", **OWN_NODE},
            "containers": [{"name": "plugin", "image": "registry.example.com/plugin:1"}],
        }}},
    }


@dataclass
class Case:
    node: str
    gpu_pods: set[str]
    operands: set[str]
    history: list[dict[str, str]]
    unschedulable_seen: list[bool]


def _node_object(name: str) -> Object:
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {**DEPLOY, **OWN_NODE, "kubernetes.io/hostname": name, "type": "kwok"},
                     "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]}},
        "status": {"capacity": resources, "allocatable": resources},
    }


def _gpu_workload(node: str) -> Object:
    labels = {"app": f"train-{node}"}
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": f"train-{node}", "namespace": NAMESPACE},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
                                                                                  "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [{"name": "train", "image": "registry.example.com/train:1",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        }}},
    }


def _running(admin: Client, node: str, prefix: str) -> set[str]:
    return {
        pod.metadata.name for pod in admin.list(Pod, namespace=NAMESPACE, fields={"spec.nodeName": node})
        if pod.metadata.name.startswith(prefix) and pod.status is not None and pod.status.phase == "Running"
        and pod.metadata.deletionTimestamp is None
    }


class NodeWatch:
    """Every version of the node's labels and unschedulable flag, from a watch."""

    def __init__(self, plane: ControlPlane, node: str) -> None:
        self.labels: list[dict[str, str]] = []
        self.unschedulable: list[bool] = []
        self._client = plane.client()
        self._node = node
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        try:
            for _, obj in self._client.watch(Node, fields={"metadata.name": self._node}):
                self.labels.append(dict(obj.metadata.labels or {}))
                self.unschedulable.append(bool(obj.spec.unschedulable) if obj.spec else False)
        except httpx2.HTTPError:
            return


@pytest.fixture
def case(request: pytest.FixtureRequest, admin: Client, control_plane: ControlPlane,
         applied: list[Object]) -> Iterator[Case]:
    name = "dm-" + "-".join(request.node.name.split("_")[1:3])
    admin.apply(Node.from_dict(_node_object(name)), field_manager="e2e-driver-manager", force=True)
    workload = _gpu_workload(name)
    admin.apply(ReplicaSet.from_dict(workload), field_manager="e2e-driver-manager", force=True)
    wait_until(
        lambda: len(_running(admin, name, "train-")) == 2 and bool(_running(admin, name, "nvidia-device-plugin")),
        timeout=60, what=f"the GPU pods and the operand pod Running on {name}",
    )
    watch = NodeWatch(control_plane, name)
    wait_until(lambda: bool(watch.labels), timeout=10, what="the node watch")
    operands = _running(admin, name, "nvidia-device-plugin")
    yield Case(name, _running(admin, name, "train-"), operands, watch.labels, watch.unschedulable)
    admin.delete(ReplicaSet, workload["metadata"]["name"], namespace=NAMESPACE)
    admin.delete(Node, name)


def _host_root(tmp: Path, modules: str, digest: str) -> Path:
    root = tmp / "host-root"
    for directory in ("proc/self", "run/nvidia", "run/mellanox/drivers", "sys/bus/pci/devices", "host"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "proc/modules").write_text(modules)
    (root / "proc/self/mountinfo").write_text("")
    if digest:
        (root / "run/nvidia/nvidia-driver.state").write_text(digest + "\n")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for command, script in FAKE_COMMANDS.items():
        path = bin_dir / command
        path.write_text(script)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return root


def _agent_env(rendered: list[Object], node: str, root: Path, **extra: str) -> dict[str, str]:
    spec = container(daemonset(rendered, "nvidia-driver-daemonset"), "k8s-driver-manager")
    assert spec["command"] == ["gpu-operator-agent", "driver-manager"] and spec["args"] == ["uninstall_driver"]
    pod = SimpleNamespace(metadata=SimpleNamespace(name="nvidia-driver-daemonset-e2e", namespace=NAMESPACE),
                          spec=SimpleNamespace(nodeName=node, serviceAccountName=ACCOUNT))
    env = rendered_env(spec, pod)
    env.update({
        "DRIVER_MANAGER_ROOT": str(root), "DRIVER_MANAGER_POLL_INTERVAL": "0.5",
        "PATH": f"{root.parent / 'bin'}:{os.environ.get('PATH', '')}", **extra,
    })
    return env


def _rendered_digest(rendered: list[Object]) -> str:
    spec = container(daemonset(rendered, "nvidia-driver-daemonset"), "k8s-driver-manager")
    return next(item["value"] for item in spec["env"] if item["name"] == "DRIVER_CONFIG_DIGEST")


def _run(admin: Client, control_plane: ControlPlane, env: dict[str, str], tmp: Path) -> tuple[int, str, list[Any]]:
    events_before = len(control_plane.audit_events(f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"))
    token = service_account_token(admin, NAMESPACE, ACCOUNT)
    result = run_agent(control_plane, "driver-manager", env, token, tmp / "work", args=("uninstall_driver",))

    def audited() -> list[Any]:
        return audited_requests(control_plane.audit_events(f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"))

    wait_until(lambda: len(audited()) > events_before, timeout=10, what="the agent's requests in the audit log")
    requests = audited()[events_before:]
    refused = forbidden(requests)
    assert requests and not refused, "\n".join(map(str, refused)) + "\n" + result.output
    return result.returncode, result.output, requests


def _labels(admin: Client, node: str) -> dict[str, str]:
    return {k: v for k, v in (admin.get(Node, node).metadata.labels or {}).items() if k in DEPLOY}


def test_fresh_install_exits_0_and_touches_nothing(
    case: Case, admin: Client, control_plane: ControlPlane, rendered: list[Object], tmp_path: Path
) -> None:
    env = _agent_env(rendered, case.node, _host_root(tmp_path, "", ""))
    code, output, requests = _run(admin, control_plane, env, tmp_path)
    assert code == 0, output
    assert "route no-driver-loaded" in output
    assert _labels(admin, case.node) == DEPLOY and not admin.get(Node, case.node).spec.unschedulable
    assert _running(admin, case.node, "train-") == case.gpu_pods
    assert _running(admin, case.node, "nvidia-device-plugin") == case.operands
    assert {(r.verb, r.resource) for r in requests} == {("get", "nodes"), ("list", "pods")}
    note(f"driver-manager fresh install on {case.node}: exit 0, {len(requests)} requests (get node, list pods), "
         "no label written, no eviction")


def test_upgrade_pauses_operands_evicts_gpu_pods_unloads_and_restores(
    case: Case, admin: Client, control_plane: ControlPlane, rendered: list[Object], tmp_path: Path
) -> None:
    root = _host_root(tmp_path, LOADED, "0" * 64)
    code, output, requests = _run(admin, control_plane, _agent_env(rendered, case.node, root), tmp_path)
    assert code == 0, output
    assert "route upgrade" in output and "old driver is unloaded" in output
    assert (root / "proc/modules").read_text() == ""
    paused = [v for v in case.history if v.get(PLUGIN) == "paused-for-driver-upgrade"]
    assert paused and all(v["nvidia.com/gpu.deploy.gpu-feature-discovery"] == "paused-for-driver-upgrade"
                          and v["nvidia.com/gpu.deploy.dcgm-exporter"] == "false" for v in paused), case.history
    assert any(case.unschedulable_seen)
    assert _labels(admin, case.node) == DEPLOY and not admin.get(Node, case.node).spec.unschedulable
    assert not (_running(admin, case.node, "train-") & case.gpu_pods)  # the old GPU pods are gone
    evictions = sorted(r.name for r in requests if r.resource == "pods/eviction")
    assert evictions == sorted(case.gpu_pods)
    # the device plugin was descheduled while paused, and the DaemonSet made a new one once restored
    wait_until(lambda: bool(_running(admin, case.node, "nvidia-device-plugin") - case.operands), timeout=30,
               what="a new device plugin pod after the restore")
    verbs = sorted({f"{r.verb} {r.resource}" for r in requests})
    note(f"driver-manager upgrade on {case.node}: exit 0, operands paused then restored, {len(evictions)} GPU pods "
         f"evicted, modules unloaded, node uncordoned; {len(requests)} requests ({', '.join(verbs)}), none refused")


def test_digest_match_keeps_the_driver_and_the_gpu_pods(
    case: Case, admin: Client, control_plane: ControlPlane, rendered: list[Object], tmp_path: Path
) -> None:
    root = _host_root(tmp_path, LOADED, _rendered_digest(rendered))
    code, output, requests = _run(admin, control_plane, _agent_env(rendered, case.node, root), tmp_path)
    assert code == 0, output
    assert "route driver-matches" in output
    assert (root / "proc/modules").read_text() == LOADED
    assert not any(r.resource == "pods/eviction" for r in requests)
    assert not any(case.unschedulable_seen)
    assert any(v.get(PLUGIN) == "paused-for-driver-upgrade" for v in case.history)
    assert _labels(admin, case.node) == DEPLOY
    assert _running(admin, case.node, "train-") == case.gpu_pods
    note(f"driver-manager digest match on {case.node}: exit 0, operands paused and restored, no cordon, no eviction")


def test_a_disruption_budget_fails_the_run_with_the_node_restored(
    case: Case, admin: Client, control_plane: ControlPlane, rendered: list[Object], tmp_path: Path
) -> None:
    budget = {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": f"train-{case.node}", "namespace": NAMESPACE},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": f"train-{case.node}"}}},
    }
    admin.apply(PodDisruptionBudget.from_dict(budget), field_manager="e2e-driver-manager", force=True)
    try:
        root = _host_root(tmp_path, LOADED, "0" * 64)
        env = _agent_env(rendered, case.node, root, DRAIN_TIMEOUT_SECONDS="6s")
        code, output, requests = _run(admin, control_plane, env, tmp_path)
    finally:
        admin.delete(PodDisruptionBudget, budget["metadata"]["name"], namespace=NAMESPACE)
    assert code == 1, output
    assert "DRAIN_TIMEOUT_SECONDS" in output and "disruption budget" in output
    refused = [r for r in requests if r.resource == "pods/eviction" and r.code == 429]
    assert len(refused) >= 2
    assert any(case.unschedulable_seen)
    assert _labels(admin, case.node) == DEPLOY and not admin.get(Node, case.node).spec.unschedulable
    assert (root / "proc/modules").read_text() == LOADED
    assert _running(admin, case.node, "train-") == case.gpu_pods
    note(f"driver-manager blocked by a PodDisruptionBudget on {case.node}: exit 1 after DRAIN_TIMEOUT_SECONDS=6s, "
         f"{len(refused)} evictions answered 429, labels restored, node uncordoned")
