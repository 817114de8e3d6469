"""Running one of our agents as a local process, as its rendered container would run on a simulated node.

The process gets the container's rendered environment (literal values; `fieldRef`s resolved as the kubelet would
for the DaemonSet's pod on that node), a simulated GPU (`GPU_OPERATOR_NVML=fake:<profile>`), and a kubeconfig whose
token is a TokenRequest for the service account the render gives the DaemonSet: what the agent may do against the
API server is exactly what the rendered RBAC grants. Host paths the agents write are pointed at a temp directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lightkube import Client
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Pod, ServiceAccount

from tests.e2e.control_plane import ControlPlane
from tests.e2e.waiting import wait_until

__all__ = ["AgentRun", "container", "daemonset", "pod_on_node", "rendered_env", "service_account_token", "run_agent"]

Object = dict[str, Any]
AGENT = Path(sys.executable).parent / "gpu-operator-agent"
_AUDIENCE = "https://kubernetes.default.svc.cluster.local"


def daemonset(objects: list[Object], name: str) -> Object:
    found = [obj for obj in objects if obj["kind"] == "DaemonSet" and obj["metadata"]["name"] == name]
    assert found, f"the render has no DaemonSet {name}"
    return found[0]


def container(ds: Object, name: str) -> Object:
    pod = ds["spec"]["template"]["spec"]
    found = [c for c in [*pod.get("initContainers", []), *pod["containers"]] if c["name"] == name]
    assert found, f"DaemonSet {ds['metadata']['name']} has no container {name}"
    return found[0]


def pod_on_node(admin: Client, ds: Object, node: str, timeout: float = 60.0) -> Any:
    """The DaemonSet's pod on `node` (the DaemonSet controller makes it; KWOK makes it Running)."""
    namespace, name = ds["metadata"]["namespace"], ds["metadata"]["name"]
    found: list[Any] = []

    def made() -> bool:
        found[:] = [
            pod for pod in admin.list(Pod, namespace=namespace, fields={"spec.nodeName": node})
            if any(ref.kind == "DaemonSet" and ref.name == name for ref in pod.metadata.ownerReferences or [])
        ]
        return bool(found)

    wait_until(made, timeout=timeout, what=f"a pod of DaemonSet {name} on node {node}")
    return found[0]


def rendered_env(spec: Object, pod: Any) -> dict[str, str]:
    """The container's env as the kubelet would set it in `pod`."""
    fields = {
        "metadata.name": pod.metadata.name,
        "metadata.namespace": pod.metadata.namespace,
        "spec.nodeName": pod.spec.nodeName,
        "spec.serviceAccountName": pod.spec.serviceAccountName,
    }
    env = {}
    for item in spec.get("env", []):
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif "fieldRef" in item.get("valueFrom", {}):
            path = item["valueFrom"]["fieldRef"]["fieldPath"]
            assert path in fields, f"env {item['name']}: fieldRef {path} is not resolved by this harness"
            env[item["name"]] = fields[path]
    return env


def service_account_token(admin: Client, namespace: str, account: str) -> str:
    """A token of the service account, from the TokenRequest API."""
    request = ServiceAccount.Token(
        metadata=ObjectMeta(name=account, namespace=namespace),
        spec=TokenRequestSpec(audiences=[_AUDIENCE], expirationSeconds=3600),
    )
    issued = admin.create(request, name=account, namespace=namespace)
    return issued.status.token


@dataclass
class AgentRun:
    returncode: int
    output: str


def run_agent(
    plane: ControlPlane, name: str, env: Mapping[str, str], token: str, workdir: Path, *, args: tuple[str, ...] = (),
    timeout: float = 120.0,
) -> AgentRun:
    """Run `gpu-operator-agent <name>` to completion as the token's holder."""
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = plane.write_kubeconfig(workdir / "kubeconfig", token)
    process_env = {
        "PATH": os.environ.get("PATH", ""), "HOME": str(workdir), "PYTHONUNBUFFERED": "1",
        **env, "KUBECONFIG": str(kubeconfig),
    }
    result = subprocess.run(
        [str(AGENT), name, *args], env=process_env, cwd=workdir, capture_output=True, text=True, timeout=timeout,
    )
    return AgentRun(result.returncode, result.stdout + result.stderr)
