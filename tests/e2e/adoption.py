"""Adopting an install someone else made, under the real engine: what the adoption tests share.

An install to adopt is set up as its maker would have: NFD by `helm install` of the published chart (NVIDIA's
chart installs it as a subchart, under the field manager `helm`), the operands by a client-side create under the
maker's field manager (`helm` for a Helm install, `gpu-operator` for what NVIDIA's operator created). Then
:func:`adopt` runs `pulumi up` with adoption on and checks what adopting must leave alone: no DaemonSet's generation
moves (a pod template rendered otherwise rolls the pods; any other spec change moves it too), every pod is the one
that was there, and a preview and a refresh afterwards change nothing.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from lightkube import Client
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import Pod

from gpu_operator.config import parse_config
from gpu_operator.render.nfd import nfd_chart
from tests.e2e.apply import KindTable
from tests.e2e.control_plane import ControlPlane
from tests.e2e.engine import EngineStack, Operation
from tests.e2e.tools import E2eTools

__all__ = ["NFD_RELEASE", "Adoption", "adopt", "create_as", "daemonset_generations", "helm_install_nfd", "pod_uids"]

#: Pulumi's helm.v4.Chart names the release after its resource: the stack's NFD chart is `<operator>-node-feature-
#: discovery-chart`, and the Helm install being adopted has the same release name (so the same object names).
NFD_RELEASE = "gpu-node-feature-discovery-chart"


def helm_install_nfd(plane: ControlPlane, tools: E2eTools, document: dict[str, Any], workdir: Path) -> None:
    """`helm install` of the NFD chart the document renders, with the values it renders, under NFD_RELEASE."""
    assert (tools.bin_dir / "helm").is_file(), "helm is not built: run `make e2e-tools`"
    chart = nfd_chart(parse_config(document))
    assert chart is not None, "the document installs no NFD chart"
    values = workdir / "nfd-values.yaml"
    values.write_text(yaml.safe_dump(chart.values))
    result = subprocess.run(
        [str(tools.path("helm")), "install", NFD_RELEASE, chart.source.reference, "--namespace", chart.namespace,
         "--create-namespace", "--values", str(values), "--kubeconfig", str(plane.admin_kubeconfig), "--wait=false"],
        capture_output=True, text=True, timeout=300, env={"HOME": str(workdir), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, f"helm install failed:\n{result.stdout}\n{result.stderr}"


def create_as(client: Client, objects: list[dict[str, Any]], manager: str) -> None:
    """Each object created (POST, not apply) by the field manager `manager`, as Helm 3 and NVIDIA's operator create
    theirs; the namespace is left out (`helm install --create-namespace` made it)."""
    kinds = KindTable()
    kinds.learn(objects)
    for obj in objects:
        if obj["kind"] == "Namespace":
            continue
        client.create(kinds.resource(obj)(obj), namespace=obj["metadata"].get("namespace"), field_manager=manager)


def daemonset_generations(client: Client, namespace: str) -> dict[str, int]:
    return {ds.metadata.name: ds.metadata.generation for ds in client.list(DaemonSet, namespace=namespace)}


def pod_uids(client: Client, namespace: str) -> dict[str, str]:
    return {pod.metadata.name: pod.metadata.uid for pod in client.list(Pod, namespace=namespace)}


@dataclass(frozen=True)
class Adoption:
    """What was there before the adopting `pulumi up`, and the up itself."""

    up: Operation
    generations: dict[str, int]
    pods: dict[str, str]


def adopt(stack: EngineStack, client: Client, namespace: str) -> Adoption:
    """`pulumi up` of `stack` (adoption on) over the objects in `namespace`: it succeeds, no DaemonSet's generation
    moves, none is added beside them (an object named otherwise than the one it adopts), no pod is replaced, and a
    preview and a refresh afterwards change nothing."""
    generations, pods = daemonset_generations(client, namespace), pod_uids(client, namespace)
    up = stack.up()
    assert not up.errors, up.errors
    after = daemonset_generations(client, namespace)
    assert set(after) == set(generations), f"adopting made new DaemonSets: {sorted(set(after) - set(generations))}"
    moved = {name: (generation, after.get(name)) for name, generation in generations.items()
             if after.get(name) != generation}
    assert not moved, f"adopting changed these DaemonSets' specs (generation before, after): {moved}"
    now = pod_uids(client, namespace)
    restarted = sorted(name for name, uid in pods.items() if now.get(name) != uid)
    assert not restarted, f"pods restarted by the adoption: {restarted}"
    stack.preview(expect_no_changes=True)
    refresh = stack.refresh(expect_no_changes=True)
    assert not refresh.changed, [f"{step.op} {step.urn} {step.diffs}" for step in refresh.changed]
    return Adoption(up, generations, pods)
