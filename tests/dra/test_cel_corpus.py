"""`dra match` reaches the scheduler's verdict on every selector of the corpus (tests/dra/cel_corpus.py).

The verdicts were observed on kube-scheduler 1.36 (tests/e2e/test_dra_cel_differential.py repeats the comparison
against the live scheduler in `make e2e`); this test holds `dra match` to them without a cluster. They follow
Kubernetes' CEL library: staging/src/k8s.io/apiserver/pkg/cel/semver.go and quantity.go (`Equal` only, against a
value of the same type: MaybeNoSuchOverloadErr otherwise; no ordering), library/semverlib.go and quantity.go (the
functions, `semver()` failing on `570`, `asInteger` on a fraction), k8s.io/dynamic-resource-allocation
cel/compile.go (attributes typed `any`, capacities `kubernetes.Quantity`, a missing domain an empty map) and
structured/internal/stable/allocator_stable.go (`allocateOne` scans devices in order and stops at the first CEL
runtime error; `validateDeviceRequest` evaluates every device of an `All` request first).
"""

from __future__ import annotations

import pytest

from gpu_operator.dra.slices import PublishedDevice
from tests.dra.cel_corpus import (
    CORPUS,
    Case,
    claim,
    offline_verdict,
    simulated_node_devices,
)


@pytest.fixture(scope="module")
def h100() -> list[PublishedDevice]:
    return simulated_node_devices()


def test_the_corpus_is_large_and_covers_every_verdict() -> None:
    assert len(CORPUS) >= 30
    assert {case.wanted for case in CORPUS} == {"allocated", "unschedulable", "error", "rejected"}


@pytest.mark.parametrize("index, case", list(enumerate(CORPUS)), ids=[f"{i}-{c.wanted}" for i, c in enumerate(CORPUS)])
def test_dra_match_gives_the_schedulers_verdict(index: int, case: Case, h100: list[PublishedDevice]) -> None:
    verdict, text = offline_verdict(claim(index, case), h100)
    assert verdict == case.wanted, text
    if verdict == "error":
        assert text.startswith(f"claim dra-cel/cel-{index}: selector #0: CEL runtime error: "), text
    if verdict == "rejected":
        assert "found no matching overload" in text, text
