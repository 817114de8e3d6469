"""GPU pool values at the edges of what AKS accepts: each limit is tested on both sides.

AKS's rules: a Linux agent pool name matches `^[a-z][a-z0-9]{0,11}$` (1 to 12 characters); the cluster
autoscaler needs `minCount <= maxCount` (equal pins the pool's size) with both in 0..1000 and maxCount at least 1;
a pool's `count` with autoscaling must lie in `[minCount, maxCount]`, ends included.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, GpuStackConfig, parse_config

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}


def parsed(**pool: Any) -> GpuStackConfig:
    return parse_config({"aks": AKS, "pools": [{**H100, **pool}]})


def problems(**pool: Any) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parsed(**pool)
    return {p.path: p.message for p in caught.value.problems}


@pytest.mark.parametrize("name", ["a", "h", "h100a", "h100training", "abcdefghijkl", "z12345678901"])
def test_pool_names_of_1_to_12_characters_are_accepted(name: str) -> None:
    assert parsed(name=name).pools[0].name == name


@pytest.mark.parametrize("name", ["h100trainingp", "abcdefghijklm", "z123456789012"])
def test_a_pool_name_of_13_characters_is_refused_with_the_rule(name: str) -> None:
    assert len(name) == 13
    assert problems(name=name) == {
        "pools[0].name": (
            f"{name!r} is not an AKS pool name: 1 to 12 lower-case letters and digits, starting with a letter"
        )
    }


def test_an_empty_pool_name_is_refused() -> None:
    assert "is not an AKS pool name" in problems(name="")["pools[0].name"]


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_autoscale_min_equal_to_max_is_accepted(size: int) -> None:
    pool = parsed(autoscale={"minCount": size, "maxCount": size}).pools[0]
    assert pool.autoscale is not None
    assert (pool.autoscale.min_count, pool.autoscale.max_count, pool.initial_count) == (size, size, size)


def test_a_pool_pinned_at_zero_nodes_is_refused_on_max_count() -> None:
    assert problems(autoscale={"minCount": 0, "maxCount": 0}) == {
        "pools[0].autoscale.maxCount": "Input should be greater than or equal to 1 (got 0)"
    }


@pytest.mark.parametrize(("low", "high"), [(4, 3), (2, 1), (1000, 999)])
def test_autoscale_min_above_max_is_refused(low: int, high: int) -> None:
    assert problems(autoscale={"minCount": low, "maxCount": high}) == {
        "pools[0].autoscale": f"minCount ({low}) is greater than maxCount ({high})"
    }


@pytest.mark.parametrize(
    ("field", "value", "accepted"),
    [
        ("minCount", 0, True),
        ("minCount", -1, False),
        ("minCount", 1000, True),
        ("minCount", 1001, False),
        ("maxCount", 1, True),
        ("maxCount", 0, False),
        ("maxCount", 1000, True),
        ("maxCount", 1001, False),
    ],
)
def test_autoscale_limits(field: str, value: int, accepted: bool) -> None:
    autoscale = {"minCount": 0, "maxCount": 1000, field: value}
    if accepted:
        assert parsed(autoscale=autoscale).pools[0].autoscale is not None
    else:
        assert f"pools[0].autoscale.{field}" in problems(autoscale=autoscale)


@pytest.mark.parametrize("count", [2, 3, 4])
def test_count_inside_the_autoscale_range_ends_included_is_accepted(count: int) -> None:
    assert parsed(count=count, autoscale={"minCount": 2, "maxCount": 4}).pools[0].initial_count == count


@pytest.mark.parametrize("count", [0, 1, 5, 1000])
def test_count_outside_the_autoscale_range_is_refused(count: int) -> None:
    assert problems(count=count, autoscale={"minCount": 2, "maxCount": 4}) == {
        "pools[0].count": f"{count} is outside autoscale's range 2..4"
    }


def test_count_equal_to_a_pinned_autoscale_range_is_accepted_and_one_off_is_not() -> None:
    assert parsed(count=3, autoscale={"minCount": 3, "maxCount": 3}).pools[0].initial_count == 3
    assert problems(count=2, autoscale={"minCount": 3, "maxCount": 3}) == {
        "pools[0].count": "2 is outside autoscale's range 3..3"
    }


@pytest.mark.parametrize(("count", "accepted"), [(0, True), (1000, True), (-1, False), (1001, False)])
def test_count_without_autoscale_limits(count: int, accepted: bool) -> None:
    if accepted:
        assert parsed(count=count).pools[0].initial_count == count
    else:
        assert "pools[0].count" in problems(count=count)


def _system_pool(name: str) -> dict[str, Any]:
    return {"aks": {**AKS, "create": True, "location": "westeurope", "systemPool": {"name": name}}}


def test_the_system_pool_name_follows_the_same_rule_at_12_and_13_characters() -> None:
    aks = parse_config(_system_pool("systempool12")).aks
    assert aks is not None and aks.system_pool.name == "systempool12"
    with pytest.raises(ConfigError) as caught:
        parse_config(_system_pool("systempool123"))
    assert {p.path: p.message for p in caught.value.problems} == {
        "aks.systemPool.name": (
            "'systempool123' is not an AKS pool name: 1 to 12 lower-case letters and digits, starting with a letter"
        )
    }
