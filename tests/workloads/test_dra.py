"""DRA workload helpers and the examples: strict schema validation, CRD validation, and checked selectors."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import yaml

from gpu_operator.config import ConfigError
from gpu_operator.workloads.dra import PodClaim, Request, Selectors, claim_template, pod, resource_claim
from tests.support.reference import REPO_ROOT
from tests.support.schemas import builtin_errors, crd_errors, is_builtin

EXAMPLES = REPO_ROOT / "examples" / "workloads" / "dra"


def example_objects() -> list[dict[str, Any]]:
    return [doc for path in sorted(EXAMPLES.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]


def test_the_example_files_are_what_the_helpers_produce() -> None:
    result = subprocess.run([sys.executable, str(EXAMPLES / "dra_workloads.py"), "--check"], capture_output=True,
                            text=True, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("version", ["1.34", "1.36"])
def test_the_examples_validate_strictly(version: str) -> None:
    objects = example_objects()
    assert {o["kind"] for o in objects} == {"ResourceClaimTemplate", "ResourceClaim", "Pod", "ComputeDomain", "Job"}
    for obj in objects:
        errors = builtin_errors(obj, version) if is_builtin(obj) else crd_errors(obj)
        assert errors == [], (obj["kind"], obj["metadata"]["name"], errors)


def test_a_compute_domain_with_an_unknown_field_fails_the_crd() -> None:
    [domain] = [o for o in example_objects() if o["kind"] == "ComputeDomain"]
    domain = {**domain, "spec": {**domain["spec"], "nodes": 2}}
    assert crd_errors(domain)


def test_the_shared_claim_goes_to_both_containers() -> None:
    shared = yaml.safe_load_all((EXAMPLES / "shared-claim.yaml").read_text())
    claim, pod_ = list(shared)
    assert pod_["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
    assert [c["resources"]["claims"] for c in pod_["spec"]["containers"]] == [[{"name": "gpu"}]] * 2


def test_same_pcie_root_is_a_constraint_over_every_request() -> None:
    template = claim_template("t", "ml", [Request("a"), Request("b", count=2)], same_pcie_root=True)
    assert template["spec"]["spec"]["devices"]["constraints"] == [
        {"requests": ["a", "b"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]


def test_a_claim_for_some_containers_only() -> None:
    manifest = pod("p", "ml", "img", [PodClaim("gpu", "claim", "c", containers=("a",))], containers=("a", "b"))
    assert [c["resources"]["claims"] for c in manifest["spec"]["containers"]] == [[{"name": "gpu"}], []]
    assert builtin_errors(manifest, "1.34") == []


@pytest.mark.parametrize("build, path", [
    (lambda: claim_template("t", "ml", [Request("g", selectors=("device.attributes['gpu.nvidia.com'].minor == 0",))]),
     "requests[0].selectors[0]"),
    (lambda: claim_template("t", "ml", [Request("g", device_class="nvidia.com/gpu")]), "requests[0].device_class"),
    (lambda: resource_claim("t", "ml", [Request("g", count=0)]), "requests[0].count"),
    (lambda: claim_template("t", "ml", []), "requests"),
    (lambda: claim_template("t", "ml", [Request("g"), Request("g")]), "requests"),
    (lambda: pod("p", "ml", "img", [PodClaim("gpu", "claim", "c", containers=("x",))]), "claims[0].containers"),
])
def test_bad_arguments_name_the_argument(build: Any, path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build()
    assert [p.path for p in caught.value.problems] == [path]


def test_selectors_read_published_attributes() -> None:
    assert "quantity('80G')" in Selectors.min_memory("80G")
    with pytest.raises(ValueError, match="quantity"):
        Selectors.min_memory("80GB")
    assert Selectors.product("H100") == "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')"
    assert Selectors.product("it's") .endswith("contains('it\\'s')")
