"""Each policy with a passing and a failing object; policy-in-the-loop over every example and stack."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from gpu_operator.config import load_config
from gpu_operator.policy import POLICIES, Enforcement, PolicyContext, check
from gpu_operator.policy.model import chart_name
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
    key: Any = int(last) if isinstance(node, list) else last
    if value is None:
        del node[key]
    else:
        node[key] = value
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


TAINT = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
FLEET = PolicyContext(pool_taints=((TAINT,),), max_infiniband_nics=8, prometheus_selector={"release": "prom"},
                      production=True)  # production: the advisories that are silent otherwise
NS = {"apiVersion": "v1", "kind": "Namespace",
      "metadata": {"name": "gpu-operator", "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}}
DRIVER = _with(_with(DS, "metadata.name", "nvidia-driver-daemonset"),
               "spec.template.spec.containers.0.securityContext", {"privileged": True})
GPU_POD = _with(_with(POD, "spec.containers.0.resources", {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "8"}}),
                "spec.tolerations", [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])
LABELLED_SM = _with(SM, "metadata.labels", {"release": "prom"})
EXPORTER = _with(_with(DS, "metadata.name", "nvidia-dcgm-exporter"), "spec.template.spec.containers.0",
                 {"name": "nvidia-dcgm-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless",
                  "resources": {"requests": {"memory": "512Mi"}, "limits": {"memory": "1024Mi"}}})
SRIOV = {"resourceList": [{"resourcePrefix": "rdma", "resourceName": "ib",
                           "selectors": [{"vendors": ["15b3"], "linkTypes": ["infiniband"], "isRdma": True}]}]}
SHARED = {"configList": [{"resourceName": "shared_ib", "rdmaHcaMax": 63, "selectors": {"vendors": ["15b3"]}}]}
NCP = {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "metadata": {"name": "nic-cluster-policy"},
       "spec": {"ofedDriver": {"containerResources": [{"name": "mofed-container", "limits": {"memory": "6Gi"}}]},
                "sriovDevicePlugin": {"config": json.dumps(SRIOV)},
                "rdmaSharedDevicePlugin": {"config": json.dumps(SHARED)}}}
NETWORK_CHART = {"apiVersion": "helm.sh/v4", "kind": "Chart", "metadata": {"name": "network-operator"},
                 "chart": "network-operator", "values": {"nfd": {"enabled": True}}}
NFD_CHART = {"apiVersion": "helm.sh/v4", "kind": "Chart", "metadata": {"name": "node-feature-discovery"},
             "chart": "node-feature-discovery", "values": {}}
PROD = PolicyContext(production=True, max_parallel_upgrades=0)
FLEET_CASES = [
    ("one-node-feature-discovery", [NETWORK_CHART, _with(NFD_CHART, "chart", "gpu-operator")],
     [NETWORK_CHART, NFD_CHART]),
    ("one-node-feature-discovery", [_with(NETWORK_CHART, "values.nfd.enabled", False), NFD_CHART],
     [_with(NETWORK_CHART, "values", {}), NFD_CHART]),  # the chart's default: NFD on
    ("one-node-feature-discovery", [NETWORK_CHART],  # the same charts from a local copy and a mirror
     [_with(NETWORK_CHART, "chart", "../charts/network-operator-26.4.1.tgz"),
      _with(NFD_CHART, "chart", "oci://mirror.example.com/nfd/node-feature-discovery")]),
    ("ofed-memory-fits-the-compile", [NCP],
     [_with(NCP, "spec.ofedDriver.containerResources.0.limits.memory", "50Mi")]),
    ("rdma-plugin-selects-devices", [NCP],
     [_with(NCP, "spec.rdmaSharedDevicePlugin.config", json.dumps({"configList": [{"resourceName": "shared_ib",
                                                                                  "selectors": {}}]}))]),
    ("rdma-plugin-selects-devices", [NCP], [_with(NCP, "spec.sriovDevicePlugin.config", "{\"resourceList\": []}")]),
    ("privileged-only-gpu-operands", [DRIVER], [_with(DRIVER, "metadata.name", "my-agent")]),
    ("privileged-only-gpu-operands", [GPU_POD],
     [_with(GPU_POD, "spec.containers.0.securityContext", {"privileged": True, "capabilities": {"add": ["IPC_LOCK"]}})]),
    ("psa-label-for-privileged-pods", [NS, DRIVER], [_with(NS, "metadata.labels", {}), DRIVER]),
    ("gpu-pods-tolerate-a-gpu-pool", [GPU_POD], [_with(GPU_POD, "spec.tolerations", None)]),
    ("rdma-within-infiniband-nics", [GPU_POD],
     [_with(GPU_POD, "spec.containers.0.resources", {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "16"}})]),
    ("monitors-carry-prometheus-selector", [SVC, LABELLED_SM], [SVC, SM]),
    ("exporter-memory-fits-the-gpus", [EXPORTER],
     [_with(EXPORTER, "spec.template.spec.containers.0.resources.limits.memory", "256Mi")]),
]


@pytest.mark.parametrize(("name", "passing", "failing"), CASES + FLEET_CASES, ids=[c[0] for c in CASES + FLEET_CASES])
def test_each_policy_passes_and_fails(name: str, passing: list[dict[str, Any]], failing: list[dict[str, Any]]) -> None:
    [policy] = [p for p in POLICIES if p.name == name]
    assert policy.evaluate(passing, FLEET) == []
    [violation] = policy.evaluate(failing, FLEET)
    assert violation.policy == name and violation.message


#: A memory limit as the API server may spell it → whether it is under dcgm-exporter's 512 MiB (1 GiB for OFED).
MEMORY_SPELLINGS = [
    ("1Gi", False, False), ("1024Mi", False, False), ("1048576Ki", False, False), ("1073741824", False, False),
    ("2Gi", False, False), ("1Ti", False, False), ("1536Mi", False, False), ("1G", False, True),
    ("671088640", False, True), ("512Mi", False, True), ("0.5Gi", False, True), ("600M", False, True),
    ("500e6", True, True), ("511Mi", True, True),
]


@pytest.mark.parametrize(("limit", "exporter_under", "ofed_under"), MEMORY_SPELLINGS)
def test_memory_policies_read_every_spelling(limit: str, exporter_under: bool, ofed_under: bool) -> None:
    exporter = _with(EXPORTER, "spec.template.spec.containers.0.resources.limits.memory", limit)
    ncp = _with(NCP, "spec.ofedDriver.containerResources.0.limits.memory", limit)
    [exporter_memory] = [p for p in POLICIES if p.name == "exporter-memory-fits-the-gpus"]
    [ofed_memory] = [p for p in POLICIES if p.name == "ofed-memory-fits-the-compile"]
    assert bool(exporter_memory.evaluate([exporter], FLEET)) is exporter_under
    assert bool(ofed_memory.evaluate([ncp], FLEET)) is ofed_under


@pytest.mark.parametrize(("count", "asked"), [("8", 8), (8, 8), ("16", 16), ("1k", 1000), ("8000m", 8)])
def test_device_counts_are_read_as_quantities(count: str | int, asked: int) -> None:
    pod = _with(GPU_POD, "spec.containers.0.resources", {"limits": {"nvidia.com/gpu": "8", "rdma/ib": count}})
    [rdma] = [p for p in POLICIES if p.name == "rdma-within-infiniband-nics"]
    assert bool(rdma.evaluate([pod], FLEET)) is (asked > 8)


@pytest.mark.parametrize("chart", [
    "node-feature-discovery",  # a name beside its repository URL
    "oci://registry.k8s.io/nfd/charts/node-feature-discovery",
    "../shared/reference/charts/node-feature-discovery-0.19.0.tgz",
    "/opt/charts/node-feature-discovery-v0.19.0-rc.1.tar.gz",
    "charts/node-feature-discovery/",  # a directory, as helm pull --untar names it
    "charts/node-feature-discovery.tgz",
])
def test_a_charts_name_is_read_from_every_kind_of_source(chart: str) -> None:
    assert chart_name(chart) == "node-feature-discovery"


def test_context_free_policies_are_off_without_their_context() -> None:
    unlabelled = [SVC, SM, _with(GPU_POD, "spec.tolerations", None)]
    assert [f.policy.name for f in check(unlabelled, PolicyContext())] == []


def test_every_policy_has_a_case_and_says_how_to_fix_it() -> None:
    # the two judged on config facts alone: tests/cli/test_check.py and tests/cli/test_newcomer_notes.py; the
    # remediation's: tests/policy/test_remediation_policy.py; the driver rollout's: tests/policy/test_driver_changes.py
    covered = {case[0] for case in CASES + FLEET_CASES} | {"bounded-parallel-driver-upgrades",
                                                           "infiniband-feature-registered",
                                                           "remediation-restarts-are-bounded",
                                                           "driver-changes-reach-nodes"}
    assert covered == {policy.name for policy in POLICIES}
    assert all(policy.remediation and policy.description for policy in POLICIES)


def _stack(path: Path | None) -> tuple[list[dict[str, Any]], PolicyContext]:
    config = load_config(path)
    operands = render_operands(config)
    objects = [*network_objects(config), *(o for op in operands for o in op.objects), *monitoring_objects(config)]
    return objects, PolicyContext.from_config(config)


@pytest.mark.parametrize("path", [None, *sorted((REPO_ROOT / "examples" / "configs").glob("*.yaml")),
                                  *stack_files().values()],
                         ids=lambda p: p.name if isinstance(p, Path) else "default")
def test_every_example_and_stack_passes_the_mandatory_policies(path: Path | None) -> None:
    mandatory = [f for f in check(*_stack(path)) if f.policy.enforcement is Enforcement.MANDATORY]
    assert mandatory == []


def test_the_rdma_workload_examples_pass() -> None:
    spec = importlib.util.spec_from_file_location("rdma_workloads", REPO_ROOT / "examples/workloads/rdma_workloads.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = load_config(None)
    for pytorchjob in (False, True):
        found = check(module.workloads(config, "h100", pytorchjob=pytorchjob), PolicyContext.from_config(config))
        assert found == []


def test_unlimited_parallel_driver_upgrades_are_advised_against_in_production() -> None:
    [policy] = [p for p in POLICIES if p.name == "bounded-parallel-driver-upgrades"]
    assert policy.enforcement is Enforcement.ADVISORY
    assert [v.resource for v in policy.evaluate([DRIVER], PROD)] == ["DaemonSet gpu-operator/nvidia-driver-daemonset"]
    assert policy.evaluate([DRIVER], PolicyContext(production=False, max_parallel_upgrades=0)) == []
    assert policy.evaluate([DRIVER], PolicyContext(production=True, max_parallel_upgrades=2)) == []
    assert policy.evaluate([DRIVER], PolicyContext(production=True, max_parallel_upgrades=None)) == []  # no autoUpgrade
