"""The CrossGuard pack in the real policy SDK: started as Pulumi starts it, asked over its gRPC analyzer service.

The pack runs in its own virtualenv (`make policy-venv`, part of `make test`), as `pulumi preview --policy-pack`
would run it: it prints its port, and the test, as the engine, asks for its policies (GetAnalyzerInfo) and has it
analyze stacks (AnalyzeStack): our built-in default's objects draw no mandatory violation, and a broken
DaemonSet and an unpinned image are reported against their URNs. Loopback only; the process is killed after.
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from gpu_operator.config import load_config
from gpu_operator.policy import POLICIES
from gpu_operator.render import render
from tests.support.reference import REPO_ROOT

POLICY_PYTHON = REPO_ROOT / ".venv-policy" / "bin" / "python"
PACK = REPO_ROOT / "policy-pack"


@pytest.fixture(scope="module")
def analyzer() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    if not POLICY_PYTHON.exists():
        pytest.fail("the policy pack's virtualenv is missing: run `make policy-venv` (part of `make test`)",
                    pytrace=False)
    process = subprocess.Popen([str(POLICY_PYTHON), "-u", str(PACK / "__main__.py")], cwd=PACK,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode().strip()
        if not line.isdigit():
            process.kill()
            pytest.fail(f"the pack did not start: {line!r} {process.stderr.read().decode()[-2000:]}", pytrace=False)
        channel = grpc.insecure_channel(f"127.0.0.1:{line}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        process.kill()
        process.wait(timeout=10)


def _type(obj: dict[str, Any]) -> str:
    group_version = obj["apiVersion"] if "/" in obj["apiVersion"] else f"core/{obj['apiVersion']}"
    return f"kubernetes:{group_version}:{obj['kind']}"


def _resources(objects: list[dict[str, Any]]) -> list[analyzer_pb2.AnalyzerResource]:
    resources = []
    for index, obj in enumerate(objects):
        properties = struct_pb2.Struct()
        json_format.ParseDict(obj, properties)
        name = f"{obj['kind'].lower()}-{obj['metadata']['name']}-{index}"
        resources.append(analyzer_pb2.AnalyzerResource(
            type=_type(obj), properties=properties, name=name,
            urn=f"urn:pulumi:test::gpu-operator::{_type(obj)}::{name}"))
    return resources


def _diagnostics(analyzer: analyzer_pb2_grpc.AnalyzerStub, objects: list[dict[str, Any]]) -> list[Any]:
    response = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=_resources(objects)), timeout=60)
    return list(response.diagnostics)


def test_the_pack_offers_every_policy(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert info.name == "pulumi-gpu-operator"
    assert {policy.name for policy in info.policies} == {policy.name for policy in POLICIES}
    assert info.supportsConfig


def test_the_default_stack_has_no_mandatory_violation(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    diagnostics = _diagnostics(analyzer, render(load_config(None)))
    mandatory = [d for d in diagnostics if d.enforcementLevel == analyzer_pb2.MANDATORY]
    assert mandatory == []
    assert {d.policyName for d in diagnostics} <= {"operand-resource-requests", "psa-label-for-privileged-pods"}


def test_violations_are_reported_against_their_resources(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    objects = render(load_config(None))
    broken = copy.deepcopy(next(o for o in objects if o["kind"] == "DaemonSet"))
    broken["metadata"]["name"] = "broken"
    broken["spec"]["template"]["metadata"]["labels"] = {"app": "elsewhere"}
    broken["spec"]["template"]["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/driver:latest"
    diagnostics = _diagnostics(analyzer, [*objects, broken])
    found = {(d.policyName, d.urn.rsplit("::", 1)[-1]) for d in diagnostics
             if d.enforcementLevel == analyzer_pb2.MANDATORY}
    name = f"daemonset-broken-{len(objects)}"
    assert ("daemonset-selector-matches-template", name) in found
    assert ("image-pinned", name) in found
    assert all("Fix: " in d.message for d in diagnostics)


def test_the_pack_reads_its_counts_as_integers_whatever_number_type_the_engine_hands_over() -> None:
    from gpu_operator.policy.crossguard import context_from_config

    # the engine hands policy config numbers over as floats: 8 arrives as 8.0 (and a message said "8.0 GPUs")
    context = context_from_config({"maxInfinibandNics": 8.0, "maxParallelUpgrades": 1.0})
    assert (context.max_infiniband_nics, context.max_parallel_upgrades) == (8, 1)
    assert all(type(value) is int for value in (context.max_infiniband_nics, context.max_parallel_upgrades))


def test_the_facts_check_derives_are_the_packs_policy_config() -> None:
    """`PolicyContext.describe()` is what a stack gives the pack as policy config: every key the pack's schema
    declares, read back to the same facts (so the pack and `check --production` judge with the same ones)."""
    from gpu_operator.config import parse_config
    from gpu_operator.policy.context import PolicyContext
    from gpu_operator.policy.crossguard import CONFIG_SCHEMA, context_from_config

    config = parse_config({"aks": {"resourceGroup": "rg", "clusterName": "c", "kubernetesVersion": "1.34"},
                           "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5",
                                      "taints": ["sku=gpu:NoSchedule"]}]})
    context = PolicyContext.from_config(config, production=True)
    described = context.describe()
    assert set(described) == set(CONFIG_SCHEMA)
    assert context_from_config({k: v for k, v in described.items() if v is not None}) == context
