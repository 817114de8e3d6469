"""Adopting an NVIDIADriver-based install under the real engine (issue 28: "an NVIDIADriver-based install imports
and renders the same DaemonSets; the engine adopts them without a diff beyond what the README lists").

The cluster first holds what NVIDIA's operator leaves with `driver.nvidiaDriverCRD.enabled` (Helm values; the
ClusterPolicy's `driver.useNvidiaDriverCRD`): two NVIDIADriver resources (nvidia.com/v1alpha1), a default one on
the proprietary modules of the 580 branch and one on the open modules of the 595 branch for the H100 pool, created
through the API server (which checks them against NVIDIA's CRD, as the test does strictly first). The nodes carry
what NVIDIA's operator and NFD put on them: the owner label of `internal/nvidiadriver/nvidiadriver.go`
`AssignOwners` (a non-default NVIDIADriver whose selector matches, else the default) and NFD's OS release labels.
The driver DaemonSets are created as NVIDIA's NVIDIADriver controller creates them (field manager `gpu-operator`,
client-side create): named as our render names them, their labels and pod labels only those of NVIDIA's template
(`manifests/state-driver/0500_daemonset.yaml` v26.7.0, plus `stateSkel.addStateSpecificLabels`), the annotations
`createOrUpdateObjs` and the template set, the node selector of `internal/state/nodepool.go` `getNodePools`, and a
controller reference to their NVIDIADriver; the other operands are created in the render's form, NFD by
`helm install`. Then the adopt page's migration steps: the NVIDIADrivers exported (`kubectl get nvidiadrivers -o
yaml`) and imported with `gpu-operator import-values`, and deleted with `--cascade=orphan`.

`pulumi up` of the imported document with `adoptExistingObjects` succeeds, no DaemonSet's generation moves, every
driver pod is the one NVIDIA's DaemonSet started on its node, a preview and a refresh afterwards change nothing,
and the driver DaemonSets differ from NVIDIA's by exactly what the adopt page lists.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
from collections.abc import Iterator, Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import Node, Pod
from lightkube.types import CascadeType

from gpu_operator.cli import main
from gpu_operator.config import parse_config
from gpu_operator.config.node_metadata import DRIVER_OWNER_LABEL, GPU_PRESENT_LABEL
from gpu_operator.render.operands.nvidia_driver_names import driver_app_name, driver_name
from gpu_operator.render.stack import stack_objects
from tests.e2e.adoption import adopt, create_as, helm_install_nfd
from tests.e2e.apply import KindTable, server_side_apply, wait_established
from tests.e2e.control_plane import ControlPlane
from tests.e2e.engine import Engine
from tests.e2e.engine_fleet import base_document, cluster, engine, plane  # noqa: F401 - module fixtures
from tests.e2e.nodes import FLEET_CONFIG
from tests.e2e.report import note
from tests.e2e.tools import E2eTools
from tests.e2e.waiting import wait_until
from tests.support.reference import REFERENCE_DATA, REPO_ROOT
from tests.support.schemas import crd_errors

pytestmark = pytest.mark.e2e

NAMESPACE = "gpu-operator"
NVIDIADRIVER_CRD = REFERENCE_DATA / "crds" / "nvidia.com_nvidiadrivers.yaml"
POOL_TOLERATION = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}

#: The Helm values of the install: NVIDIADrivers instead of the ClusterPolicy's driver, no default CR from the chart
#: (ours are written below), and the pools' taint tolerated by the operands.
VALUES = {"driver": {"nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False}},
          "daemonsets": {"tolerations": [POOL_TOLERATION]}}


def _nvidia_driver(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": name},
            "spec": {"driverType": "gpu", "repository": "nvcr.io/nvidia", "image": "driver",
                     "tolerations": [POOL_TOLERATION], **spec}}


NVIDIA_DRIVERS = [
    _nvidia_driver("default", default=True, version="580.95.05", kernelModuleType="proprietary"),
    _nvidia_driver("h100-open", default=False, version="595.91.07", kernelModuleType="open",
                   nodeSelector={"kubernetes.azure.com/agentpool": "h100"}),
]
#: The nodes' OS as NVIDIA's `getOSTag` names it from NFD's labels below.
OS_TAG = "ubuntu22.04"
#: NFD's labels of the nodes' OS (Ubuntu 22.04), which NVIDIA's `getNodePools` reads and selects.
NFD_OS_LABELS = {"feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
                 "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
                 "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": "22"}
#: Those `getNodePools` puts in the DaemonSet's node selector (the tag ends in the full version: not the major).
NFD_OS_SELECTED = ("feature.node.kubernetes.io/system-os_release.ID",
                   "feature.node.kubernetes.io/system-os_release.VERSION_ID")
#: The labels NVIDIA's driver template gives the DaemonSet (with the state label) and its pods; the NVIDIADrivers
#: above set no `labels` of their own.
NVIDIA_DAEMONSET_LABELS = ("app", "nvidia.com/node.os-version", "nvidia.com/precompiled",
                           "nvidia.com/precompiled.kernel-version", "app.kubernetes.io/component",
                           "nvidia.com/gpu-operator.state")
NVIDIA_POD_LABELS = NVIDIA_DAEMONSET_LABELS[:-1]
NVIDIA_POD_ANNOTATIONS = ("kubectl.kubernetes.io/default-container",)


def added_metadata(owner: str) -> dict[str, dict[str, str]]:
    """What adopting adds to NVIDIA's driver DaemonSet: exactly the adopt page's list, all on the DaemonSet's own
    metadata (not its pods', so no pod restarts): the labels our render gives it, and the components' annotation
    that `pulumi up` does not await the DaemonSet's rollout."""
    return {"labels": {"app.kubernetes.io/managed-by": "pulumi-gpu-operator", DRIVER_OWNER_LABEL: owner},
            "annotations": {"pulumi.com/skipAwait": "true"}}


def _added(before: Mapping[str, str] | None, after: Mapping[str, str] | None) -> dict[str, str]:
    """What `after` adds to `before`; AssertionError when it drops or changes any of it."""
    before, after = before or {}, after or {}
    assert {key: after.get(key) for key in before} == dict(before), "adopting dropped or changed NVIDIA's metadata"
    return {key: value for key, value in after.items() if key not in before}


def _owner(node: Node, drivers: list[dict[str, Any]]) -> str | None:
    """NVIDIA's `desiredOwnerForNode` over GPU nodes: the one non-default NVIDIADriver whose selector matches."""
    labels = node.metadata.labels or {}
    if labels.get(GPU_PRESENT_LABEL) != "true":
        return None
    matching = [d["metadata"]["name"] for d in drivers if not d["spec"]["default"]
                and all(labels.get(k) == v for k, v in d["spec"]["nodeSelector"].items())]
    assert len(matching) <= 1, f"NVIDIA's operator refuses two NVIDIADrivers on node {node.metadata.name}"
    return matching[0] if matching else next(d["metadata"]["name"] for d in drivers if d["spec"]["default"])


def _filtered(mapping: Mapping[str, str], keys: tuple[str, ...]) -> dict[str, str]:
    return {key: value for key, value in mapping.items() if key in keys}


def nvidia_name(driver: Mapping[str, Any]) -> str:
    """The DaemonSet's name NVIDIA gives an NVIDIADriver's pool (`getDriverAppName`: its uid's hash)."""
    return driver_app_name(driver["spec"]["driverType"], OS_TAG, driver["metadata"]["uid"])


def nvidia_made(ds: dict[str, Any], driver: dict[str, Any]) -> dict[str, Any]:
    """The driver DaemonSet `ds` (our render's pod) in the form NVIDIA's NVIDIADriver controller creates it: its
    names, labels, annotations, node selector and owner NVIDIA's, whatever the render gave."""
    made = copy.deepcopy(ds)
    meta, pod = made["metadata"], made["spec"]["template"]
    name, app = driver["metadata"]["name"], nvidia_name(driver)
    meta["name"] = app
    made["spec"]["selector"] = {"matchLabels": {"app": app}}
    meta["labels"] = {**_filtered(meta["labels"], NVIDIA_DAEMONSET_LABELS), "app": app}
    pod["metadata"]["labels"] = {**_filtered(pod["metadata"]["labels"], NVIDIA_POD_LABELS), "app": app}
    pod["metadata"]["annotations"] = _filtered(pod["metadata"].get("annotations", {}), NVIDIA_POD_ANNOTATIONS)
    pod["spec"]["serviceAccountName"] = driver_name(name, driver["spec"]["driverType"], OS_TAG)
    pod["spec"]["nodeSelector"] = {"nvidia.com/gpu.deploy.driver": "true", **driver["spec"].get("nodeSelector", {}),
                                   GPU_PRESENT_LABEL: "true", DRIVER_OWNER_LABEL: name,
                                   **{key: NFD_OS_LABELS[key] for key in NFD_OS_SELECTED}}
    # the template's annotation names the driver (`getDriverName`, also the ServiceAccount's name); the hash is
    # NVIDIA's of the object it rendered: any value stands for it here
    meta["annotations"] = {"openshift.io/scc": pod["spec"]["serviceAccountName"],
                           "nvidia.com/last-applied-hash": hashlib.sha256(json.dumps(ds).encode()).hexdigest()[:10]}
    meta["ownerReferences"] = [{"apiVersion": driver["apiVersion"], "kind": driver["kind"], "name": name,
                                "uid": driver["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    return made


def import_values(values: Path, drivers: Path) -> tuple[dict[str, Any], str]:
    """`gpu-operator import-values VALUES DRIVERS` through the CLI's entry: the document and the notes."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(["import-values", str(values), str(drivers)])
    assert status == 0, err.getvalue()
    return yaml.safe_load(out.getvalue()), err.getvalue()


@dataclass(frozen=True)
class NvidiaInstall:
    client: Client
    document: dict[str, Any]
    """The imported document, with what the import's notes ask for (the agents image) and NFD's local chart."""
    daemonsets: dict[str, str]
    """NVIDIADriver name → its driver DaemonSet's name."""
    nodes: dict[str, set[str]]
    """Driver DaemonSet name → the nodes its pods run on."""


def _driver_pods(client: Client, daemonset: str) -> dict[str, str]:
    return {pod.spec.nodeName: pod.metadata.uid for pod in client.list(Pod, namespace=NAMESPACE,
                                                                        labels={"app": daemonset})}


def _label_nodes(client: Client, drivers: list[dict[str, Any]]) -> dict[str, set[str]]:
    """NFD's OS labels on every node, NVIDIA's owner label on the GPU nodes; NVIDIADriver name → its nodes."""
    owned: dict[str, set[str]] = {d["metadata"]["name"]: set() for d in drivers}
    for node in client.list(Node):
        owner = _owner(node, drivers)
        labels = {**NFD_OS_LABELS, **({DRIVER_OWNER_LABEL: owner} if owner else {})}
        client.patch(Node, node.metadata.name, {"metadata": {"labels": labels}})
        if owner:
            owned[owner].add(node.metadata.name)
    return owned


def _create_nvidia_drivers(client: Client, workdir: Path) -> tuple[list[dict[str, Any]], Path]:
    """The CRD and the NVIDIADrivers in the cluster; the exported list (`kubectl get nvidiadrivers -o yaml`)."""
    for manifest in NVIDIA_DRIVERS:
        assert crd_errors(manifest) == [], (manifest["metadata"]["name"], crd_errors(manifest))
    crds = [doc for doc in yaml.safe_load_all(NVIDIADRIVER_CRD.read_text()) if doc]
    kinds = KindTable()
    kinds.learn(crds)
    assert not server_side_apply(client, crds, kinds, dry_run=False)
    wait_established(client, [crd["metadata"]["name"] for crd in crds])
    resource = kinds.resource(NVIDIA_DRIVERS[0])
    for manifest in NVIDIA_DRIVERS:
        client.create(resource(manifest), field_manager="kubectl-create")
    exported = [item.to_dict() for item in client.list(resource)]
    drivers = workdir / "nvidiadrivers.yaml"
    drivers.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": exported}))
    return exported, drivers


def _orphan_nvidia_drivers(client: Client, exported: list[dict[str, Any]], daemonsets: list[str]) -> None:
    """`kubectl delete nvidiadrivers --all --cascade=orphan`: the garbage collector lifts the controller reference
    from the DaemonSets and leaves them (and their pods) running."""
    kinds = KindTable()
    kinds.learn(yaml.safe_load_all(NVIDIADRIVER_CRD.read_text()))
    resource = kinds.resource(exported[0])
    for driver in exported:
        client.delete(resource, driver["metadata"]["name"], cascade=CascadeType.ORPHAN)

    def orphaned() -> bool:
        try:
            remaining = list(client.list(resource))
        except ApiError:
            return False
        owned = [name for name in daemonsets if client.get(DaemonSet, name, namespace=NAMESPACE).metadata.ownerReferences]
        return not remaining and not owned

    wait_until(orphaned, timeout=60, what="the NVIDIADrivers to go with their DaemonSets orphaned")


@pytest.fixture(scope="module")
def nvidia_install(plane: ControlPlane, cluster: Client, e2e_tools: E2eTools,  # noqa: F811
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[NvidiaInstall]:
    workdir = tmp_path_factory.mktemp("nvidiadriver-install")
    exported, drivers_file = _create_nvidia_drivers(cluster, workdir)
    values = workdir / "values.yaml"
    values.write_text(yaml.safe_dump(VALUES))
    imported, notes = import_values(values, drivers_file)
    assert "set agents.image" in notes, notes  # nothing writes the owner label without the controller
    fleet = yaml.safe_load(FLEET_CONFIG.read_text())
    document = {**imported, "nfd": base_document()["nfd"], "agents": {"image": fleet["agents"]["image"]}}
    objects = stack_objects(parse_config(document))
    rendered = {obj["metadata"]["labels"][DRIVER_OWNER_LABEL]: obj for obj in objects
                if obj["kind"] == "DaemonSet" and DRIVER_OWNER_LABEL in obj["metadata"]["labels"]}
    by_name = {driver["metadata"]["name"]: driver for driver in exported}
    assert set(rendered) == set(by_name), f"one driver DaemonSet per NVIDIADriver, got {sorted(rendered)}"
    names = {owner: ds["metadata"]["name"] for owner, ds in rendered.items()}
    assert names == {owner: nvidia_name(driver) for owner, driver in by_name.items()}, "not NVIDIA's names"
    owned = _label_nodes(cluster, exported)
    helm_install_nfd(plane, e2e_tools, document, workdir)
    create_as(cluster, [obj for obj in objects if obj not in rendered.values()], "gpu-operator")
    create_as(cluster, [nvidia_made(ds, by_name[owner]) for owner, ds in rendered.items()], "gpu-operator")
    nodes = {names[owner]: owned[owner] for owner in names}
    wait_until(lambda: all(set(_driver_pods(cluster, ds)) == on for ds, on in nodes.items()), timeout=90,
               what="NVIDIA's driver DaemonSets to run a pod on each node of their NVIDIADriver")
    _orphan_nvidia_drivers(cluster, exported, list(names.values()))
    yield NvidiaInstall(cluster, document, names, nodes)


def test_up_adopts_nvidias_driver_daemonsets_without_a_restart(
    engine: Engine, plane: ControlPlane, nvidia_install: NvidiaInstall  # noqa: F811
) -> None:
    client = nvidia_install.client
    assert all(on for on in nvidia_install.nodes.values()), f"a driver with no node: {nvidia_install.nodes}"
    before = {name: client.get(DaemonSet, name, namespace=NAMESPACE) for name in nvidia_install.daemonsets.values()}
    pods = {name: _driver_pods(client, name) for name in before}
    stack = engine.stack(engine.project("gpu-operator", REPO_ROOT / "stacks"), "adopt-nvidiadriver", {
        "gpu-operator:kubeconfig": plane.admin_kubeconfig.read_text(),
        "gpu-operator:config": nvidia_install.document,
        "gpu-operator:adoptExistingObjects": True,
    })
    adoption = adopt(stack, client, NAMESPACE)
    assert {name: _driver_pods(client, name) for name in before} == pods, "a driver pod was replaced"
    for owner, name in nvidia_install.daemonsets.items():
        after = client.get(DaemonSet, name, namespace=NAMESPACE)
        added = {"labels": _added(before[name].metadata.labels, after.metadata.labels),
                 "annotations": _added(before[name].metadata.annotations, after.metadata.annotations)}
        assert added == added_metadata(owner), name
        assert after.spec == before[name].spec, name
    note(f"engine: adopted an NVIDIADriver install ({len(before)} driver DaemonSets on "
         f"{sum(map(len, pods.values()))} nodes, {len(adoption.generations)} DaemonSets, {len(adoption.pods)} pods) "
         f"in {adoption.up.seconds:.1f} s: no generation moved, no pod restarted, only the listed metadata added")
