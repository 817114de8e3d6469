"""Each policy with a passing and a failing object; policy-in-the-loop over every example and stack."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from gpu_operator.config import load_config
from gpu_operator.policy import POLICIES, Enforcement, check
from gpu_operator.render import render_operands
from gpu_operator.render.monitoring import monitoring_objects
from gpu_operator.render.network import network_objects
from tests.support.reference import REPO_ROOT
from tests.support.stack_programs import stack_files

DS = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds", "namespace": "gpu-operator"},
      "spec": {"selector": {"matchLabels": {"app": "ds"}},
               "template": {"metadata": {"labels": {"app": "ds"}},
                            "spec": {"containers": [{"name": "c", "image": "nvcr.io/nvidia/x:1.0",
                                                     "resources": {"requests": {"cpu": "10m"}}}]}}}}
SVC = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "exp", "namespace": "gpu-operator",
                                                           "labels": {"app": "exp"}},
       "spec": {"ports": [{"name": "gpu-metrics", "port": 9400}]}}
SM = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
      "metadata": {"name": "exp", "namespace": "gpu-operator"},
      "spec": {"selector": {"matchLabels": {"app": "exp"}}, "namespaceSelector": {"matchNames": ["gpu-operator"]},
               "endpoints": [{"port": "gpu-metrics", "interval": "15s", "scrapeTimeout": "10s"}]}}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plugin", "namespace": "gpu-operator"},
      "data": {"shared": "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n"
                         "    resources: [{name: nvidia.com/gpu, replicas: 4}]\n"}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rdma", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "ubuntu:24.04",
                                "resources": {"limits": {"rdma/ib": "8"}},
                                "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}]}}


def _with(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    node: Any = changed
    *parents, last = path.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return changed


CASES = [
    ("image-pinned", [DS], [_with(DS, "spec.template.spec.containers.0.image", "nvcr.io/nvidia/x")]),
    ("image-pinned", [DS], [_with(DS, "spec.template.spec.containers.0.image", "registry:5000/x:latest")]),
    ("daemonset-selector-matches-template", [DS], [_with(DS, "spec.template.metadata.labels", {"app": "other"})]),
    ("servicemonitor-selects-a-service", [SVC, SM], [SVC, _with(SM, "spec.selector.matchLabels", {"app": "x"})]),
    ("servicemonitor-selects-a-service", [SVC, SM], [SVC, _with(SM, "spec.endpoints.0.port", "metrics")]),
    ("scrape-timeout-within-interval", [SVC, SM], [SVC, _with(SM, "spec.endpoints.0.interval", "5s")]),
    ("operand-resource-requests", [DS], [_with(DS, "spec.template.spec.containers.0.resources", None)]),
    ("time-slicing-fails-requests-over-one", [CM], [_with(CM, "data.shared", CM["data"]["shared"].replace(
        "failRequestsGreaterThanOne: true", "failRequestsGreaterThanOne: false"))]),
    ("rdma-requests-ipc-lock", [POD], [_with(POD, "spec.containers.0.securityContext", None)]),
]


@pytest.mark.parametrize(("name", "passing", "failing"), CASES, ids=[c[0] for c in CASES])
def test_each_policy_passes_and_fails(name: str, passing: list[dict[str, Any]], failing: list[dict[str, Any]]) -> None:
    [policy] = [p for p in POLICIES if p.name == name]
    assert policy.evaluate(passing) == []
    [violation] = policy.evaluate(failing)
    assert violation.policy == name and violation.message


def test_every_policy_has_a_case_and_says_how_to_fix_it() -> None:
    assert {case[0] for case in CASES} == {policy.name for policy in POLICIES}
    assert all(policy.remediation and policy.description for policy in POLICIES)


def _stack_objects(path: Path | None) -> list[dict[str, Any]]:
    config = load_config(path)
    operands = render_operands(config)
    return [*network_objects(config), *(o for op in operands for o in op.objects), *monitoring_objects(config)]


@pytest.mark.parametrize("path", [None, *sorted((REPO_ROOT / "examples" / "configs").glob("*.yaml")),
                                  *stack_files().values()],
                         ids=lambda p: p.name if isinstance(p, Path) else "default")
def test_every_example_and_stack_passes_the_mandatory_policies(path: Path | None) -> None:
    mandatory = [f for f in check(_stack_objects(path)) if f.policy.enforcement is Enforcement.MANDATORY]
    assert mandatory == []


def test_the_rdma_workload_examples_pass() -> None:
    spec = importlib.util.spec_from_file_location("rdma_workloads", REPO_ROOT / "examples/workloads/rdma_workloads.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = load_config(None)
    for pytorchjob in (False, True):
        assert check(module.workloads(config, "h100", pytorchjob=pytorchjob)) == []
