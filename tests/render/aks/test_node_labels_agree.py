"""The labels an AKS pool is created with are what the node labeller would write on its nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.config import load_config
from gpu_operator.labels import GPU_PCI_LABELS, MIG_CAPABLE_LABEL, apply_changes, label_changes
from gpu_operator.render import render
from gpu_operator.render.aks.node_labels import labelling_policy, pool_node_labels, rendered_deploy_operands
from tests.support.reference import REPO_ROOT

CONFIGS = sorted((REPO_ROOT / "examples" / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", [None, *CONFIGS], ids=lambda p: p.name if isinstance(p, Path) else "default")
def test_pool_labels_are_a_fixed_point_of_the_labeller(path: Path | None) -> None:
    config = load_config(path)
    rendered = rendered_deploy_operands(render(config))
    policy = labelling_policy(config)
    for pool in config.pools:
        created = pool_node_labels(pool, config, rendered)
        hardware = pool.hardware
        live = {**created, GPU_PCI_LABELS[0]: "true"}  # what NFD adds once the node runs
        if hardware is not None:
            live[MIG_CAPABLE_LABEL] = "true" if hardware.gpu.mig_capable else "false"  # and GFD
        changes = label_changes(live, policy)
        # DRA pools switch the device plugin off on purpose: a kept non-empty value, not a change
        assert changes == {}, (pool.name, changes)
        assert apply_changes(live, changes) == live
