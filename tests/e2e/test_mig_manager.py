"""The MIG manager agent against the real API server, on a simulated A100 node of the fleet, with its rendered RBAC.

The fleet config is rendered into a namespace of its own (so this module shares nothing with the fleet tests),
and only the MIG manager's objects are applied: its ServiceAccount, Roles, bindings and ConfigMaps. The agent then
runs as a local process the way its container would (the rendered env, a token of its ServiceAccount, a simulated
8 x A100 80GB node) and follows the node's `nvidia.com/mig.config` label while the test changes it:
`all-disabled` -> `all-1g.10gb` -> `all-balanced` -> an impossible layout -> `all-disabled`. Each change must end
in `nvidia.com/mig.config.state` success (failed for the impossible one, with the reason on the node and the
previous layout kept), the operands' deploy labels must be paused while it runs and restored after, and the API
server must have refused none of the agent's requests.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx2
import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap, Node

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


def _wait_state(admin: Client, node: str, state: str, process: subprocess.Popen[str]) -> None:
    def reached() -> bool:
        assert process.poll() is None, f"the MIG manager exited ({process.returncode})"
        labels = _labels(admin, node)
        return labels.get(STATE_LABEL) == state and not _paused(labels)

    wait_until(reached, timeout=60, interval=0.1, what=f"{STATE_LABEL}={state} on {node}")


def test_mig_manager_applies_label_changes_with_its_rendered_rbac(
    admin: Client, control_plane: ControlPlane, applied: list[Object], rendered: list[Object],
    fleet: list[SimulatedNode], tmp_path: Path,
) -> None:
    node = next(n for n in fleet if n.pool == "a100mig").name
    admin.patch(Node, node, {"metadata": {"labels": {**DEPLOY, CONFIG_LABEL: "all-disabled"}}})
    spec = container(daemonset(rendered, NAME), NAME)
    pod = SimpleNamespace(metadata=SimpleNamespace(name=f"{NAME}-e2e", namespace=NAMESPACE),
                          spec=SimpleNamespace(nodeName=node, serviceAccountName=NAME))
    env = rendered_env(spec, pod)
    maps = {o["metadata"]["name"]: o for o in applied if o["kind"] == "ConfigMap"}
    shipped = maps["default-mig-parted-config"]
    default_config = tmp_path / "config-default.yaml"
    default_config.write_text(shipped["data"]["config.yaml"] + IMPOSSIBLE)
    token = service_account_token(admin, NAMESPACE, NAME)
    env.update({
        "DEFAULT_CONFIG_FILE": str(default_config),  # where the ConfigMap is mounted in the pod
        "CDI_ENABLED": "false",  # nvidia-ctk runs in the host's root, which this process has not got
        "PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONUNBUFFERED": "1",
        "KUBECONFIG": str(control_plane.write_kubeconfig(tmp_path / "kubeconfig", token)),
    })
    args = [str(AGENT), "mig-manager", "--nvml", "fake:a100-8x-mig", "--poll-interval", "0.2",
            "--generated-config-file", str(tmp_path / "generated.yaml"), "--validations-dir", str(tmp_path / "none")]
    log = (tmp_path / "mig-manager.log").open("w")
    history = NodeHistory(control_plane, node)
    process = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_state(admin, node, "success", process)
        for name, final in (("all-1g.10gb", "success"), ("all-balanced", "success"), ("too-much", "failed")):
            start = len(history.versions)
            _set_label(admin, node, name)
            _wait_state(admin, node, final, process)
            expected = ["success", "pending", "paused", "pending", final]
            wait_until(lambda: len(history.states_since(start)) >= len(expected), timeout=10,
                       what=f"the watch to see the {name} change ({history.states_since(start)})")
            # pending, the operands paused (dcgm-exporter stays false), then the outcome with the labels restored
            assert history.states_since(start) == expected, (name, history.states_since(start))
            assert {k: _labels(admin, node)[k] for k in DEPLOY} == DEPLOY
        annotations = admin.get(Node, node).metadata.annotations or {}
        assert "previous layout restored" in annotations[REASON], annotations
        assert "cannot create a 2g.20gb instance" in annotations[REASON], annotations
        _set_label(admin, node, "all-disabled")
        _wait_state(admin, node, "success", process)
        assert REASON not in (admin.get(Node, node).metadata.annotations or {})
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()
    published = admin.get(ConfigMap, f"{node}-mig-config", namespace=NAMESPACE)
    layouts = yaml.safe_load(published.data["config.yaml"])["mig-configs"]
    assert {"all-disabled", "all-1g.10gb", "all-balanced", "too-much"} <= set(layouts)
    requests = audited_requests(control_plane.audit_events(f"system:serviceaccount:{NAMESPACE}:{NAME}"))
    refused = forbidden(requests)
    assert requests and not refused, "\n".join(map(str, refused)) + "\n" + (tmp_path / "mig-manager.log").read_text()
    note(f"mig-manager as {NAMESPACE}/{NAME}: {len(requests)} requests, none refused; "
         "all-disabled -> all-1g.10gb -> all-balanced -> failed (too-much) -> all-disabled")
