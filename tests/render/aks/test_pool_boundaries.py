"""Pools at AKS's limits render as AKS takes them: a 12-character name, a pinned autoscaler, counts at the ends."""

from __future__ import annotations

import pytest

from gpu_operator.render.aks.agent_pool import agent_pool_properties, agent_pool_resource
from tests.render.aks.helpers import H100, T4, with_pools

SCALING = ("count", "enableAutoScaling", "minCount", "maxCount")


def test_a_twelve_character_pool_name_is_the_agent_pool_name() -> None:
    config = with_pools({**H100, "name": "h100training"})
    assert agent_pool_resource(config.pools[0], config)["name"] == "aks-gpu/h100training"


def test_a_pinned_autoscaler_keeps_autoscaling_on_at_its_one_size() -> None:
    config = with_pools({**T4, "autoscale": {"minCount": 3, "maxCount": 3}})
    props = agent_pool_properties(config.pools[0], config)
    assert {key: props[key] for key in SCALING} == {
        "count": 3,
        "enableAutoScaling": True,
        "minCount": 3,
        "maxCount": 3,
    }


@pytest.mark.parametrize("count", [1, 4])
def test_a_count_at_either_end_of_the_range_is_the_initial_count(count: int) -> None:
    config = with_pools({**T4, "count": count, "autoscale": {"minCount": 1, "maxCount": 4}})
    props = agent_pool_properties(config.pools[0], config)
    assert {key: props[key] for key in SCALING} == {
        "count": count,
        "enableAutoScaling": True,
        "minCount": 1,
        "maxCount": 4,
    }
