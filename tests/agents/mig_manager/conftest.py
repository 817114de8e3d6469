"""Fixtures the MIG manager's tests share: a simulated 8x A100 (MIG on) node and a fake API server holding its
Node. A module that needs the Node labelled (a GPU client's deploy label, a requested config) defines its own
`server`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpu_operator.agents.nvml.simulated import SimulatedLibrary, load_profile
from tests.agents.kube.fake_apiserver import FakeApiServer

NODE = "gpu-node-0"


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        running.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {}}})
        yield running


@pytest.fixture
def library() -> SimulatedLibrary:
    lib = SimulatedLibrary(load_profile("a100-8x-mig"), sleep=lambda _: None)
    lib.nvmlInitWithFlags(0)
    return lib
