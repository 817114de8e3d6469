"""Namespaces of the objects the stack creates outside its own (DRA claim templates beside the workloads): each is
declared, `existing` or `create`, or render refuses it, naming the namespace and the fix, with exit 2 and nothing
written (issue 22, item 10: under the real engine an undeclared `ml` failed mid-update, `namespaces "ml" not
found`). The claim template shape follows kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 `demo/specs/quickstart/`
(a ResourceClaimTemplate in the workload's namespace)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.config import parse_config
from gpu_operator.config.namespace_checks import SYSTEM_NAMESPACES, owned_namespaces
from gpu_operator.render.stack import stack_objects
from tests.support.reference import REPO_ROOT

TEMPLATE = {"name": "one-gpu", "namespace": "ml", "spec": {"devices": {"requests": [
    {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
BASE: dict[str, Any] = {
    "aks": {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34"},
    "operator": {"driver": {"version": "580.95.05"}},
    "network": {"enabled": False},
    "pools": [{"name": "h100dra", "vmSize": "Standard_ND96isr_H100_v5", "gpuAllocation": "dra"}],
}


def _dra(**dra: Any) -> dict[str, Any]:
    return {**BASE, "dra": dra}


REFUSED = [
    ("undeclared", _dra(claimTemplates=[TEMPLATE]),
     ["dra.claimTemplates[0].namespace: namespace 'ml' is not one the stack creates",
      "dra.namespaces: {ml: existing}", "{ml: create}"]),
    ("unknown use", _dra(namespaces={"ml": "maybe"}, claimTemplates=[TEMPLATE]), ["dra.namespaces.ml"]),
    ("create a system namespace", _dra(namespaces={"kube-system": "create"},
                                        claimTemplates=[{**TEMPLATE, "namespace": "kube-system"}]),
     ["dra.namespaces.kube-system: 'kube-system' is a namespace of the cluster itself",
      "dra.namespaces: {kube-system: existing}"]),
    ("create the stack's own", _dra(namespaces={"gpu-operator": "create"}, claimTemplates=[TEMPLATE]),
     ["dra.namespaces.gpu-operator: the stack creates namespace 'gpu-operator' already"]),
]


@pytest.mark.parametrize(("document", "expected"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_an_undeclared_namespace_is_refused(document: dict[str, Any], expected: list[str], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(document), encoding="utf-8")
    assert main(["render", "-f", str(config), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for part in expected:
        assert part in err
    assert not (tmp_path / "out").exists()


ACCEPTED = [
    ("existing", _dra(namespaces={"ml": "existing"}, claimTemplates=[TEMPLATE]), []),
    ("create", _dra(namespaces={"ml": "create"}, claimTemplates=[TEMPLATE]), ["ml"]),
    ("the stack's own namespace", _dra(claimTemplates=[{**TEMPLATE, "namespace": "gpu-operator"}]), []),
    ("the driver's namespace", _dra(claimTemplates=[{**TEMPLATE, "namespace": "dra-driver-nvidia-gpu"}]), []),
    ("existing system namespace", _dra(namespaces={"default": "existing"},
                                       claimTemplates=[{**TEMPLATE, "namespace": "default"}]), []),
]


@pytest.mark.parametrize(("document", "created"), [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_a_declared_namespace_is_created_only_when_asked(document: dict[str, Any], created: list[str]) -> None:
    objects = stack_objects(parse_config(document))
    namespaces = [o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"]
    assert [n for n in namespaces if n not in ("gpu-operator", "dra-driver-nvidia-gpu")] == created
    template = next(i for i, o in enumerate(objects) if o["kind"] == "ResourceClaimTemplate")
    for name in created:  # created before the templates that live in it
        assert namespaces and next(i for i, o in enumerate(objects)
                                   if o["kind"] == "Namespace" and o["metadata"]["name"] == name) < template


@pytest.mark.parametrize("example", sorted((REPO_ROOT / "examples" / "configs").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_example_object_lives_in_a_namespace_of_the_plan_or_a_declared_one(example: Path) -> None:
    from gpu_operator.config import load_config

    config = load_config(example)
    objects = stack_objects(config)
    planned = owned_namespaces(config) | {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    declared = set(config.dra.namespaces) | SYSTEM_NAMESPACES  # every cluster has its own
    for obj in objects:
        namespace = obj["metadata"].get("namespace")
        assert namespace is None or namespace in planned | declared, (obj["kind"], obj["metadata"]["name"])
