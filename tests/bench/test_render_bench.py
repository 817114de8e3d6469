"""Render and Pulumi-program benchmarks, each beside a baseline measured in the same run (`make bench`).

* render: the full default stack, config already validated; baseline: deep-copying the same objects, i.e.
  building the same number of plain dicts of the same shape.
* render + validate: the whole path from a config document.
* program: GpuOperator under Pulumi mocks; baseline: registering the same number of ConfigMaps directly.
"""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from gpu_operator.components import GpuOperator

from gpu_operator.config import load_config, parse_config
from gpu_operator.config.loader import BUILTIN_DEFAULT, read_yaml_mapping
from gpu_operator.render import render
from gpu_operator.render.nfd import nfd_chart
from tests.support.pulumi_mocks import run_program

CONFIG = load_config(None)
OBJECTS = render(CONFIG)


def test_render_default_stack(benchmark: Any) -> None:
    objects = benchmark(render, CONFIG)
    assert len(objects) == len(OBJECTS)


def test_baseline_build_same_dicts(benchmark: Any) -> None:
    objects = benchmark(copy.deepcopy, OBJECTS)
    assert objects == OBJECTS


def test_validate_and_render_from_document(benchmark: Any) -> None:
    document = read_yaml_mapping(BUILTIN_DEFAULT)
    objects = benchmark(lambda: render(parse_config(document)))
    assert len(objects) == len(OBJECTS)


def _operator_program() -> None:
    provider = k8s.Provider("cluster", kubeconfig="{}")
    GpuOperator("gpu", {"provider": provider, "config": CONFIG})


def _baseline_program() -> None:
    provider = k8s.Provider("cluster", kubeconfig="{}")
    for index in range(len(OBJECTS)):
        k8s.core.v1.ConfigMap(f"cm-{index}", metadata={"name": f"cm-{index}"}, data={"k": "v"},
                              opts=pulumi.ResourceOptions(provider=provider))


@pytest.mark.parametrize(
    "program, resources",
    # + the NFD chart, unless the Network Operator's NFD serves (the default's InfiniBand pool)
    [(_operator_program, len(OBJECTS) + (nfd_chart(CONFIG) is not None)), (_baseline_program, len(OBJECTS))],
    ids=["gpu-operator", "baseline-configmaps"],
)
def test_program_under_mocks(benchmark: Any, program: Any, resources: int) -> None:
    recording = benchmark.pedantic(run_program, args=(program,), rounds=5, iterations=1, warmup_rounds=1)
    assert len(recording.of_type("kubernetes:")) == resources
