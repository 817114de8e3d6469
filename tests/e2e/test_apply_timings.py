"""The server-side apply baseline, from 1 to 20 pools: how long the API server takes for our rendered objects.

This is the figure `pulumi up` and `pulumi preview` compare against (the Pulumi engine adds its own work on top).
Pools change the labels and taints of nodes and the AKS agent pools, not the Kubernetes objects, so the object
count is the same for every pool count; the test checks that and prints the times of a first apply, a no-op
re-apply and a dry run. Times are printed, never asserted.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml
from lightkube import ApiError, Client

from gpu_operator.config import parse_config
from gpu_operator.render import render
from tests.e2e.apply import KindTable, server_side_apply
from tests.e2e.nodes import FLEET_CONFIG
from tests.e2e.report import note

pytestmark = pytest.mark.e2e

_SIZES = (("Standard_ND96isr_H100_v5", None), ("Standard_ND96asr_v4", "all-1g.5gb"))


def _config_with_pools(count: int, namespace: str) -> dict[str, Any]:
    document = yaml.safe_load(FLEET_CONFIG.read_text())
    document["namespace"] = namespace
    document["pools"] = [
        {"name": f"gpu{index}", "vmSize": size, "count": 1, **({"migConfig": mig} if mig else {})}
        for index, (size, mig) in ((i, _SIZES[i % 2]) for i in range(count))
    ]
    return document


def _timed(action: Any) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def test_server_side_apply_baseline_from_1_to_20_pools(admin: Client, kinds: KindTable) -> None:
    rows, counts = [], set()
    for pools in (1, 20):
        namespace = f"perf-{pools}"
        objects = render(parse_config(_config_with_pools(pools, namespace), source=f"{pools} pools"))
        counts.add(len(objects))
        table = KindTable(custom=dict(kinds.custom))
        table.learn(objects)

        def apply(dry_run: bool) -> None:
            failures = server_side_apply(admin, objects, table, dry_run=dry_run, field_manager="e2e-perf")
            assert not failures, "\n".join(map(str, failures))

        first = _timed(lambda: apply(False))
        again = _timed(lambda: apply(False))
        dry = _timed(lambda: apply(True))
        rows.append(f"{pools:>5} {len(objects):>7} {first:>10.2f} {again:>10.2f} {dry:>10.2f}")
        for obj in reversed(objects):
            try:
                admin.delete(table.resource(obj), obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"))
            except ApiError as error:
                if error.status.code not in (404, 409):
                    raise
    assert len(counts) == 1, f"the object count depends on the pool count: {counts}"
    note("server-side apply of the rendered objects (seconds, this machine, this run):\n"
          f"{'pools':>5} {'objects':>7} {'first':>10} {'re-apply':>10} {'dry run':>10}\n" + "\n".join(rows))
