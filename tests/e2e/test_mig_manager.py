"""The MIG manager agent against the real API server, on a simulated A100 node of the fleet, with its rendered RBAC.

The fleet config is rendered into a namespace of its own (so this module shares nothing with the fleet tests),
and only the MIG manager's objects are applied: its ServiceAccount, Roles, bindings and ConfigMaps. The agent then
runs as a local process the way its container would (the rendered env, a token of its ServiceAccount, a simulated
8 x A100 80GB node) and follows the node's `nvidia.com/mig.config` label while the test changes it: first with
the config it generates from the GPUs (`all-disabled` -> `all-1g.10gb` -> `all-balanced`), published as the
ConfigMap `<node>-mig-config` owned by its pod; then, restarted with a `CONFIG_FILE` that adds an impossible
layout, that layout -> `all-disabled`. Each change must end in `nvidia.com/mig.config.state` success (failed for
the impossible one, with the reason on the node and the previous layout kept), the operands' deploy labels must
be paused while it runs and restored after, and the API server must have refused none of the agent's requests.

A third-party GPU client runs on the node: a DaemonSet selecting `nvidia.com/gpu.deploy.client=true` whose pods
take a few seconds to finish terminating (a finalizer the test lifts 3 s after the deletion). The DaemonSet
controller removes its pod when the MIG manager pauses the label, and the MIG manager must still be `pending`
when that pod is finally gone (NVIDIA's `waitForPodsWithNodeSelector`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from lightkube import Client
from lightkube.types import PatchType
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import ConfigMap, Node, Pod

from gpu_operator.config import parse_config
from gpu_operator.render import render
from tests.e2e.agents import AGENT, container, daemonset, rendered_env, service_account_token
from tests.e2e.apply import KindTable, server_side_apply
from tests.e2e.control_plane import ControlPlane
from tests.e2e.nodes import FLEET_CONFIG, SimulatedNode
from tests.e2e.rbac import audited_requests, forbidden
from tests.e2e.report import note
from tests.e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

Object = dict[str, Any]
NAMESPACE = "gpu-mig-e2e"
NAME = "nvidia-mig-manager"
CONFIG_LABEL = "nvidia.com/mig.config"
STATE_LABEL = "nvidia.com/mig.config.state"
REASON = "nvidia.com/mig.config.state.reason"
DEPLOY = {"nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
          "nvidia.com/gpu.deploy.dcgm-exporter": "false"}
IMPOSSIBLE = "  too-much:\n  - {devices: all, mig-enabled: true, mig-devices: {3g.40gb: 2, 2g.20gb: 1}}\n"
CLIENT_LABEL = "nvidia.com/gpu.deploy.client"
CLIENT = "e2e-gpu-client"
LINGER = "e2e.gpu-operator.test/linger"


def _ours(obj: Object) -> bool:
    meta = obj["metadata"]
    return (obj["kind"] == "Namespace" and meta["name"] == NAMESPACE) or (
        obj["kind"] != "DaemonSet" and (meta["name"] == NAME or (meta.get("labels") or {}).get("app") == NAME))


@pytest.fixture(scope="module")
def rendered() -> list[Object]:
    document = yaml.safe_load(FLEET_CONFIG.read_text())
    document["namespace"] = NAMESPACE
    return render(parse_config(document))


@pytest.fixture(scope="module")
def applied(admin: Client, rendered: list[Object], fleet: list[SimulatedNode]) -> Iterator[list[Object]]:
    objects = [obj for obj in rendered if _ours(obj)]
    table = KindTable()
    table.learn(objects)
    failures = server_side_apply(admin, objects, table, dry_run=False, field_manager="e2e-mig")
    assert not failures, "the API server refused:\n" + "\n".join(map(str, failures))
    yield objects
    for obj in reversed(objects):
        if obj["kind"] != "Namespace":
            admin.delete(table.resource(obj), obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"))


def _labels(admin: Client, node: str) -> dict[str, str]:
    return dict(admin.get(Node, node).metadata.labels or {})


def _set_label(admin: Client, node: str, value: str) -> None:
    admin.patch(Node, node, {"metadata": {"labels": {CONFIG_LABEL: value}}})


class NodeHistory:
    """Every version of the node's labels, from a watch (the API server sends each change, in order)."""

    def __init__(self, plane: ControlPlane, node: str) -> None:
        self.versions: list[dict[str, str]] = []
        self._client = plane.client()
        self._node = node
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        try:
            for _, obj in self._client.watch(Node, fields={"metadata.name": self._node}):
                self.versions.append(dict(obj.metadata.labels or {}))
        except httpx2.HTTPError:
            return  # the control plane stopped at the end of the session

    def states_since(self, start: int) -> list[str]:
        """The state label's values from version `start` on, repeats collapsed, with `paused` where operands were."""
        found: list[str] = []
        for labels in self.versions[start:]:
            for value in (labels.get(STATE_LABEL, ""), *(["paused"] if _paused(labels) else [])):
                if not found or found[-1] != value:
                    found.append(value)
        return found


def _paused(labels: dict[str, str]) -> bool:
    return any(labels.get(k) == "paused-for-mig-change" for k in DEPLOY)


class SlowClient:
    """A GPU client DaemonSet whose pods stay Terminating for `linger` seconds (a finalizer lifted by this thread),
    recording the node's MIG state at each release."""

    def __init__(self, plane: ControlPlane, node: str, linger: float = 3.0) -> None:
        self.client, self.node, self.linger = plane.client(), node, linger
        self.released: list[str] = []
        self.errors: list[str] = []
        self.halt = threading.Event()
        self._seen: dict[str, float] = {}
        self.thread = threading.Thread(target=self._run, daemon=True)

    def daemonset(self) -> Object:
        template = {
            "metadata": {"labels": {"app": CLIENT}, "finalizers": [LINGER]},
            "spec": {"nodeSelector": {CLIENT_LABEL: "true"}, "tolerations": [{"operator": "Exists"}],
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                         "nodeSelectorTerms": [{"matchFields": [
                             {"key": "metadata.name", "operator": "In", "values": [self.node]}]}]}}},
                     "containers": [{"name": "client", "image": "registry.example/gpu-client:1"}]},
        }
        return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": CLIENT, "namespace": NAMESPACE},
                "spec": {"selector": {"matchLabels": {"app": CLIENT}}, "template": template}}

    def pods(self) -> list[Any]:
        return list(self.client.list(Pod, namespace=NAMESPACE, labels={"app": CLIENT}))

    def _release(self, pod: Any) -> None:
        finalizers = [f for f in (pod.metadata.finalizers or []) if f != LINGER]
        self.client.patch(Pod, pod.metadata.name, {"metadata": {"finalizers": finalizers}}, namespace=NAMESPACE,
                          patch_type=PatchType.MERGE)  # a strategic merge would keep the finalizer

    def _run(self) -> None:
        while not self.halt.wait(0.2):
            try:
                for pod in self.pods():
                    if pod.metadata.deletionTimestamp is None or LINGER not in (pod.metadata.finalizers or []):
                        continue
                    first = self._seen.setdefault(pod.metadata.uid, time.monotonic())
                    if time.monotonic() - first >= self.linger:
                        self.released.append(_labels(self.client, self.node).get(STATE_LABEL, ""))
                        self._release(pod)
            except Exception as error:  # noqa: BLE001 - kept for the failure message; the thread must not die
                self.errors.append(repr(error))

    def stop(self) -> None:
        """Stop lingering: every pod of the client may go."""
        self.halt.set()
        self.thread.join(timeout=10)
        for pod in self.pods():
            if LINGER in (pod.metadata.finalizers or []):
                self._release(pod)


def _wait_state(admin: Client, node: str, state: str, process: subprocess.Popen[str]) -> None:
    def reached() -> bool:
        assert process.poll() is None, f"the MIG manager exited ({process.returncode})"
        labels = _labels(admin, node)
        return labels.get(STATE_LABEL) == state and not _paused(labels)

    wait_until(reached, timeout=60, interval=0.1, what=f"{STATE_LABEL}={state} on {node}")


def _run_agent(args: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[str]:
    log = log_path.open("a")
    process = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    log.close()
    return process


def _stop_agent(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _change(admin: Client, history: NodeHistory, node: str, name: str, final: str,
            process: subprocess.Popen[str]) -> None:
    start = len(history.versions)
    _set_label(admin, node, name)
    _wait_state(admin, node, final, process)
    expected = ["success", "pending", "paused", "pending", final]
    wait_until(lambda: len(history.states_since(start)) >= len(expected), timeout=10,
               what=f"the watch to see the {name} change ({history.states_since(start)})")
    # pending, the operands paused (dcgm-exporter stays false), then the outcome with the labels restored
    assert history.states_since(start) == expected, (name, history.states_since(start))
    assert {k: _labels(admin, node)[k] for k in DEPLOY} == DEPLOY


def test_mig_manager_applies_label_changes_with_its_rendered_rbac(
    admin: Client, control_plane: ControlPlane, applied: list[Object], rendered: list[Object],
    fleet: list[SimulatedNode], tmp_path: Path,
) -> None:
    node = next(n for n in fleet if n.pool == "a100mig").name
    admin.patch(Node, node, {"metadata": {"labels": {**DEPLOY, CLIENT_LABEL: "true", CONFIG_LABEL: "all-disabled"}}})
    spec = container(daemonset(rendered, NAME), NAME)
    own_pod = admin.create(Pod.from_dict({  # the pod the agent is, owner of its node's ConfigMap
        "metadata": {"name": f"{NAME}-e2e", "namespace": NAMESPACE, "labels": {"app": f"{NAME}-e2e"}},
        "apiVersion": "v1", "kind": "Pod",
        "spec": {"nodeName": node, "serviceAccountName": NAME, "tolerations": [{"operator": "Exists"}],
                 "containers": [{"name": NAME, "image": spec["image"]}]}}))
    env = rendered_env(spec, own_pod)
    maps = {o["metadata"]["name"]: o for o in applied if o["kind"] == "ConfigMap"}
    shipped = maps["default-mig-parted-config"]
    default_config = tmp_path / "config-default.yaml"
    default_config.write_text(shipped["data"]["config.yaml"])
    with_impossible = tmp_path / "config.yaml"
    with_impossible.write_text(shipped["data"]["config.yaml"] + IMPOSSIBLE)
    token = service_account_token(admin, NAMESPACE, NAME)
    env.update({
        "DEFAULT_CONFIG_FILE": str(default_config),  # where the ConfigMap is mounted in the pod
        "CDI_ENABLED": "false",  # nvidia-ctk runs in the host's root, which this process has not got
        "PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONUNBUFFERED": "1",
        "KUBECONFIG": str(control_plane.write_kubeconfig(tmp_path / "kubeconfig", token)),
    })
    args = [str(AGENT), "mig-manager", "--nvml", "fake:a100-8x-mig", "--poll-interval", "0.2",
            "--generated-config-file", str(tmp_path / "generated.yaml"), "--validations-dir", str(tmp_path / "none")]
    log_path = tmp_path / "mig-manager.log"
    client = SlowClient(control_plane, node)
    admin.create(DaemonSet.from_dict(client.daemonset()))
    wait_until(lambda: any(p.status and p.status.phase == "Running" for p in client.pods()), timeout=60,
               what=f"the GPU client's pod running on {node}")
    client.thread.start()
    history = NodeHistory(control_plane, node)
    process = _run_agent(args, env, log_path)
    try:
        _wait_state(admin, node, "success", process)
        for name in ("all-1g.10gb", "all-balanced"):
            _change(admin, history, node, name, "success", process)
        _stop_agent(process)
        published = admin.get(ConfigMap, f"{node}-mig-config", namespace=NAMESPACE)
        layouts = yaml.safe_load(published.data["config.yaml"])["mig-configs"]
        assert {"all-disabled", "all-1g.10gb", "all-balanced"} <= set(layouts) and "too-much" not in layouts
        assert published.metadata.labels == {"app.kubernetes.io/component": NAME, "nvidia.com/node-name": node}
        assert [(o.kind, o.name, o.uid) for o in published.metadata.ownerReferences] == [
            ("Pod", own_pod.metadata.name, own_pod.metadata.uid)]
        # restarted with a config file that adds an impossible layout
        process = _run_agent(args, {**env, "CONFIG_FILE": str(with_impossible)}, log_path)
        _wait_state(admin, node, "success", process)
        _change(admin, history, node, "too-much", "failed", process)
        annotations = admin.get(Node, node).metadata.annotations or {}
        assert "previous layout restored" in annotations[REASON], annotations
        assert "cannot create a 2g.20gb instance" in annotations[REASON], annotations
        _set_label(admin, node, "all-disabled")
        _wait_state(admin, node, "success", process)
        assert REASON not in (admin.get(Node, node).metadata.annotations or {})
    finally:
        _stop_agent(process)
        client.stop()
        admin.delete(DaemonSet, CLIENT, namespace=NAMESPACE)
        admin.delete(Pod, own_pod.metadata.name, namespace=NAMESPACE)
    # every change paused the client, and each time its pod left only while the MIG manager still waited
    assert len(client.released) >= 4 and set(client.released) == {"pending"}, (client.released, client.errors)
    requests = audited_requests(control_plane.audit_events(f"system:serviceaccount:{NAMESPACE}:{NAME}"))
    refused = forbidden(requests)
    assert requests and not refused, "\n".join(map(str, refused)) + "\n" + log_path.read_text()
    note(f"mig-manager as {NAMESPACE}/{NAME}: {len(requests)} requests, none refused; "
         "all-disabled -> all-1g.10gb -> all-balanced (generated config, owned ConfigMap) -> failed (too-much) -> "
         f"all-disabled, a GPU client released {len(client.released)} times while pending")
