"""The IPPool's CRD, created by the Network Operator at runtime: when it is served, and the wait for it."""

from __future__ import annotations

import pytest

from gpu_operator.readiness.crd import CrdNotEstablished, crd_established, wait_for_crd
from tests.support.fake_clock import FakeClock


def test_only_an_established_crd_is_served() -> None:
    assert not crd_established(None)
    assert not crd_established([("NamesAccepted", "True"), ("Established", "False")])
    assert crd_established([("NamesAccepted", "True"), ("Established", "True")])


def test_the_wait_outlasts_the_providers_create_retries() -> None:
    """pulumi-kubernetes 4.32.0 pkg/await/await.go `Creation` retries a create on "no matches for kind" 5 times,
    sleeping 1 s doubling (pkg/retry/retry.go `SleepingRetry`): 31 s. The Network Operator creates the CRD when it
    reconciles the NicClusterPolicy (Mellanox/network-operator v26.4.1 pkg/state/state_nv_ipam_cni.go `Sync`), which
    may come later: the wait goes on until the CRD is Established."""
    clock = FakeClock()
    seen = iter([None] * 30 + [[("NamesAccepted", "True")], [("Established", "True")]])
    wait_for_crd("ippools.nv-ipam.nvidia.com", lambda: next(seen), 600, 2, clock=clock, sleep=clock.sleep)
    assert clock.now > 31


def test_the_deadline_names_the_crd_and_where_to_look() -> None:
    clock = FakeClock()
    with pytest.raises(CrdNotEstablished) as raised:
        wait_for_crd("ippools.nv-ipam.nvidia.com", lambda: None, 10, 2, clock=clock, sleep=clock.sleep)
    assert "ippools.nv-ipam.nvidia.com does not exist after 10 s" in str(raised.value)
    assert "network-operator" in str(raised.value)
