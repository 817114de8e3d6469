"""Adopting an existing install under the real engine: no conflict, no pod restarted (the docs' task page
docs/tasks/adopt-existing-install.md, after its step 4).

The cluster first holds what a Helm install leaves: Node Feature Discovery installed by `helm install` of the
published chart (its own rendering, field manager `helm`), and the operands NVIDIA's chart deploys created with a
client-side create under the field manager `helm`, in the form the API server stores them. Then the stack runs
`pulumi up` with `gpu-operator:adoptExistingObjects: true` (the provider's `upsertExistingObjects`), which
server-side applies over them. A value we render differently from what the server stores (a non-canonical
quantity, a `fieldRef` without its defaulted `apiVersion`, both atomic or compared whole) is a conflict with
`helm`'s field and fails the update; a pod template we render differently rolls every operand's pods. So: the
update succeeds, no DaemonSet's generation moves, every operand pod is the one that was there, and a preview and a
refresh afterwards change nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.apps_v1 import DaemonSet

from gpu_operator.config import parse_config
from gpu_operator.render.stack import stack_objects
from tests.e2e.adoption import adopt, create_as, helm_install_nfd, pod_uids
from tests.e2e.control_plane import ControlPlane
from tests.e2e.engine import Engine
from tests.e2e.report import note
from tests.e2e.engine_fleet import base_document, cluster, engine, plane  # noqa: F401 - module fixtures
from tests.e2e.waiting import wait_until
from tests.support.reference import REPO_ROOT

pytestmark = pytest.mark.e2e

STACK = "adopt"


@pytest.fixture(scope="module")
def adopted_cluster(plane: ControlPlane, cluster: Client, e2e_tools: Any,  # noqa: F811
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    document = base_document()
    helm_install_nfd(plane, e2e_tools, document, tmp_path_factory.mktemp("helm"))
    create_as(cluster, stack_objects(parse_config(document)), "helm")
    yield cluster


#: A user's own program: GpuOperator on a provider of its own that upserts but does not force its applies (the
#: adopt page's "set upsert_existing_objects=True on your own k8s.Provider"), so a value rendered otherwise than the
#: server stores it conflicts with Helm's field; the stack's own provider forces (kubernetes_provider).
OWN_PROVIDER_PROGRAM = """\
import pulumi
import pulumi_kubernetes as k8s
from gpu_operator.components import GpuOperator

settings = pulumi.Config("gpu-operator")
provider = k8s.Provider("cluster", kubeconfig=settings.require_secret("kubeconfig"), upsert_existing_objects=True)
GpuOperator("gpu", {"provider": provider, "config": settings.require_object("config")})
"""


def _adopter(name: str, tmp_path: Path) -> Path:
    if name == "stack":
        return REPO_ROOT / "stacks"
    (tmp_path / "__main__.py").write_text(OWN_PROVIDER_PROGRAM)
    return tmp_path


@pytest.mark.parametrize("adopter", ["own-provider", "stack"])
def test_up_adopts_a_helm_install_without_conflict_or_restart(
    adopter: str, engine: Engine, plane: ControlPlane, adopted_cluster: Client, tmp_path: Path  # noqa: F811
) -> None:
    document = base_document()
    namespace = document["namespace"]
    wait_until(lambda: len(pod_uids(adopted_cluster, namespace)) > 0, timeout=60,
               what="the DaemonSet controller to start the operands' pods")
    project = engine.project("gpu-operator", _adopter(adopter, tmp_path))
    stack = engine.stack(project, f"{STACK}-{adopter}", {
        "gpu-operator:kubeconfig": plane.admin_kubeconfig.read_text(),
        "gpu-operator:config": document,
        "gpu-operator:adoptExistingObjects": True,
    })
    adoption = adopt(stack, adopted_cluster, namespace)
    note(f"engine: {adopter} adopted a Helm install ({len(adoption.generations)} DaemonSets, "
         f"{len(adoption.pods)} pods) in {adoption.up.seconds:.1f} s: no conflict, no generation moved, no pod restarted")
    # forget the adopted objects (they stay for the next test, as after a `pulumi stack rm` of a trial stack)
    stack.cli("state", "delete", "--all", "--yes", "--force", check=False)


def test_waiting_for_daemonsets_never_waits_on_the_driver(
    engine: Engine, plane: ControlPlane, adopted_cluster: Client  # noqa: F811
) -> None:
    """`waitForDaemonsets` awaits rollouts, but a driver rollout is not the provider's to await: with the operator
    controller the driver's DaemonSet is OnDelete and nothing else rolls it (awaiting it hung `pulumi up` until the
    provider's 10-minute timeout on every driver version change); without it (this stack: no agents image) the
    DaemonSet rolls the new driver itself, one node at a time, minutes each on a real node. Either way `up` returns
    at once; here the DaemonSet controller then replaces every driver pod by itself (issue 28 item 6: a driver
    change reaches the nodes without the controller)."""
    document = base_document()
    namespace = document["namespace"]
    project = engine.project("gpu-operator", REPO_ROOT / "stacks")
    stack = engine.stack(project, "waits", {"gpu-operator:kubeconfig": plane.admin_kubeconfig.read_text(),
                                            "gpu-operator:config": document, "gpu-operator:adoptExistingObjects": True,
                                            "gpu-operator:waitForDaemonsets": True})
    stack.up()
    driver_pods = {name: uid for name, uid in pod_uids(adopted_cluster, namespace).items()
                   if name.startswith("nvidia-driver-daemonset")}
    assert driver_pods, "no driver pod ran before the change"
    document["operator"]["driver"] = {"version": "580.95.05"}
    stack.set_config({"gpu-operator:kubeconfig": plane.admin_kubeconfig.read_text(), "gpu-operator:config": document,
                      "gpu-operator:waitForDaemonsets": True})
    up = stack.up()
    [driver] = [step for step in up.steps if step.type == "kubernetes:apps/v1:DaemonSet"
                and (step.inputs or {}).get("metadata", {}).get("name") == "nvidia-driver-daemonset"]
    assert driver.op == "update"
    assert up.seconds < 180, f"up took {up.seconds:.0f} s: it waited on the driver DaemonSet's rollout"
    daemonset = adopted_cluster.get(DaemonSet, "nvidia-driver-daemonset", namespace=namespace)
    assert daemonset.spec.updateStrategy.type == "RollingUpdate", "no controller here: the DaemonSet rolls itself"

    def replaced() -> bool:
        now = {name: uid for name, uid in pod_uids(adopted_cluster, namespace).items()
               if name.startswith("nvidia-driver-daemonset")}
        return len(now) == len(driver_pods) and not set(now.values()) & set(driver_pods.values())

    wait_until(replaced, timeout=180, what="the DaemonSet to replace every driver pod")
    note(f"engine: waitForDaemonsets with a driver version change and no controller: up in {up.seconds:.1f} s, then "
         f"the DaemonSet replaced its {len(driver_pods)} driver pod(s) by itself (RollingUpdate)")
    stack.destroy()
