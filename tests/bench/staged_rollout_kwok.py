"""The staged rollout bench against a real API server and KWOK nodes (`BENCH_KWOK=1`; needs `make e2e-tools`).

`BENCH_KWOK_NODES` KWOK GPU nodes (default 1,000) in 4 AKS pools (`canary` with a hundredth of them, then `pool2`,
`pool3` and `pool4`) on one control plane, the controller as a local process with its rendered ServiceAccount's
token (tests/e2e/controller_fleet.py), maxParallelUpgrades 50, maxUnavailable 100%. Two driver changes in the
same run, on the same nodes, each from every node `upgrade-done`:

1. the single-DaemonSet rollout (no `operator.driver.rollout`);
2. the staged rollout: `canary` (soak `BENCH_KWOK_SOAK` s, default 20), `pool2` (the same soak), then `*`.

Measured for each: wall time from the new template to every node `upgrade-done`, uncordoned, on a new driver
pod; the controller's rounds (its `gpu_operator_reconciliation_total`) and its CPU (utime + stime of
/proc/<pid>/stat) over the rollout, so CPU per round. Asserted: both finish; no node of a later stage is cordoned
before the earlier stage was done for its soak (within the sampler's interval). Nothing asserts a time.

On a loaded 2-core machine 500 nodes take about 9 minutes for both rollouts (most of it the API server, the
DaemonSet controller and KWOK); 1,000 about twice that.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client

from gpu_operator.config import parse_config
from gpu_operator.render import render
from tests.e2e.apply import KindTable, server_side_apply
from tests.e2e.control_plane import ControlPlane, running_control_plane, stop_process_group
from tests.e2e.controller_fleet import (
    STATE,
    controller_objects,
    fleet_document,
    gpu_node,
    histogram,
    log_tail,
    node_map,
    pods_of,
    start_controller,
)
from tests.e2e.scrape import _samples
from tests.e2e.tools import locate_tools
from tests.e2e.waiting import wait_until

__all__ = ["run_kwok_bench"]

POOL_LABEL = "kubernetes.azure.com/agentpool"
NODES = int(os.environ.get("BENCH_KWOK_NODES", "1000"))
SOAK = int(os.environ.get("BENCH_KWOK_SOAK", "20"))
PARALLEL, UNAVAILABLE = 50, "100%"
VERSIONS = ("595.91.07", "595.100.01", "595.110.02")
ROLLOUT = {"stages": [{"name": "canary", "pools": ["canary"], "soakSeconds": SOAK},
                      {"name": "pool2", "pools": ["pool2"], "soakSeconds": SOAK},
                      {"name": "rest", "pools": ["*"]}]}
STAGE_OF = {"canary": "canary", "pool2": "pool2", "pool3": "rest", "pool4": "rest"}
SAMPLE_SECONDS = 1.0
#: the waits, generous for a loaded 2-core machine and growing with the fleet
SETTLE_SECONDS = 120 + NODES * 0.6
ROLLOUT_SECONDS = 300 + NODES * 1.2 + 2 * SOAK
Object = dict[str, Any]


def pools(count: int) -> dict[str, int]:
    """pool -> nodes: a canary of a hundredth (at least one), the rest in three pools as even as can be."""
    canary = max(1, count // 100)
    rest = count - canary
    return {"canary": canary, **{f"pool{i + 2}": rest // 3 + (i < rest % 3) for i in range(3)}}


def _objects(version: str, rollout: Object | None) -> list[Object]:
    """The controller's objects with the bench's four pools (a stage may name only a pool of the config)."""
    document = fleet_document(version, PARALLEL, UNAVAILABLE, rollout=rollout)
    document["pools"] = [{"name": name, "vmSize": "Standard_ND96isr_H100_v5", "count": count}
                         for name, count in pools(NODES).items()]
    kept = {(o["kind"], o["metadata"]["name"]) for o in controller_objects(version, PARALLEL, UNAVAILABLE)}
    return [o for o in render(parse_config(document)) if (o["kind"], o["metadata"]["name"]) in kept]


def _nodes() -> list[Object]:
    nodes = []
    for pool, count in pools(NODES).items():
        for index in range(count):
            node = gpu_node(0)
            name = f"{pool}-{index:03d}"
            node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = name
            node["metadata"]["labels"][POOL_LABEL] = pool
            nodes.append(node)
    return nodes


def _apply(admin: Client, objects: list[Object]) -> None:
    failures = server_side_apply(admin, objects, KindTable(), dry_run=False, field_manager="bench-staged")
    assert not failures, "\n".join(map(str, failures[:10]))


def _driver_revisions(admin: Client) -> dict[str, str]:
    """node -> the controller-revision-hash of its live (not terminating) driver pod."""
    return {p.spec.nodeName: (p.metadata.labels or {}).get("controller-revision-hash", "")
            for p in pods_of(admin, "nvidia-driver-daemonset") if p.metadata.deletionTimestamp is None
            and p.spec.nodeName and p.status and p.status.phase == "Running"}


def _settled(admin: Client, old: Mapping[str, str] | None = None) -> bool:
    """Every node `upgrade-done`, schedulable, on a Running driver pod (a new one, when `old` is given)."""
    nodes = node_map(admin)
    if len(nodes) != NODES or any((n.metadata.labels or {}).get(STATE) != "upgrade-done" or n.spec.unschedulable
                                  for n in nodes.values()):
        return False
    revisions = _driver_revisions(admin)
    return set(revisions) == set(nodes) and all(old is None or revisions[n] != old.get(n) for n in nodes)


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (fields 14 and 15 of /proc/<pid>/stat, after the command's parenthesis)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rounds(metrics_url: str) -> float:
    return next((float(s.value) for s in _samples(metrics_url) if s.name == "gpu_operator_reconciliation_total"), 0.0)


class _Sampler(threading.Thread):
    """When each node was first seen cordoned, and when each stage was first seen with every node done on a new
    driver pod."""

    def __init__(self, admin: Client, old: Mapping[str, str]) -> None:
        super().__init__(daemon=True)
        self.admin, self.old, self.stop = admin, old, threading.Event()
        self.first_cordoned: dict[str, float] = {}
        self.stage_done: dict[str, float] = {}

    def run(self) -> None:
        while not self.stop.wait(SAMPLE_SECONDS):
            try:
                nodes, revisions = node_map(self.admin), _driver_revisions(self.admin)
            except Exception:  # the control plane is stopping
                return
            now = time.monotonic()
            pending: set[str] = set()
            for name, node in nodes.items():
                if node.spec.unschedulable:
                    self.first_cordoned.setdefault(name, now)
                if (node.metadata.labels or {}).get(STATE) != "upgrade-done" or revisions.get(name) in (None, self.old.get(name)):
                    pending.add(STAGE_OF[(node.metadata.labels or {}).get(POOL_LABEL, "")])
            for stage in set(STAGE_OF.values()) - pending:
                self.stage_done.setdefault(stage, now)


def _rollout(plane: ControlPlane, admin: Client, workdir: Path, old: str, new: str,
             rollout: Object | None) -> dict[str, Any]:
    """One driver change from `old` to `new` under a controller with `rollout` (None: no stages), measured."""
    workdir.mkdir(parents=True, exist_ok=True)
    _apply(admin, _objects(old, rollout))
    process = start_controller(plane, admin, workdir)
    try:
        wait_until(lambda: _settled(admin), timeout=SETTLE_SECONDS, what=f"{NODES} nodes upgrade-done at {old}",
                   interval=2.0)
        before = _driver_revisions(admin)
        sampler = _Sampler(admin, before)
        sampler.start()
        cpu, rounds, started = _cpu_seconds(process.pid), _rounds(process.metrics_url), time.monotonic()
        _apply(admin, [o for o in _objects(new, rollout) if o["kind"] == "DaemonSet"
                       and o["metadata"]["name"] == "nvidia-driver-daemonset"])
        try:
            wait_until(lambda: _settled(admin, before), timeout=ROLLOUT_SECONDS, interval=2.0,
                       what=f"{NODES} nodes upgrade-done at {new}")
        finally:
            sampler.stop.set()
            sampler.join(timeout=30)
        took = time.monotonic() - started
        cpu, rounds = _cpu_seconds(process.pid) - cpu, _rounds(process.metrics_url) - rounds
        assert process.poll() is None, log_tail(process)
    except (AssertionError, TimeoutError) as error:
        pytest.fail(f"{error}\n{histogram(admin)}\n{log_tail(process)}", pytrace=False)
    finally:
        stop_process_group(process)
    first: dict[str, float] = {}
    for name, at in sampler.first_cordoned.items():
        stage = STAGE_OF[name.rsplit("-", 1)[0]]
        first[stage] = min(first.get(stage, at), at)
    return {"seconds_to_done": took, "rounds": rounds, "cpu_s": cpu, "cpu_ms_per_round": cpu / max(rounds, 1) * 1e3,
            "first_cordoned": first, "stage_done": dict(sampler.stage_done)}


def _check_stages(staged: Mapping[str, Any]) -> None:
    """No node of a later stage cordoned before the earlier one was done for its soak (the sampler sees a stage
    done up to one interval late, and a cordon up to one interval late)."""
    first, done = staged["first_cordoned"], staged["stage_done"]
    for earlier, later in (("canary", "pool2"), ("pool2", "rest")):
        assert first[later] - done[earlier] >= SOAK - SAMPLE_SECONDS - 1, (earlier, later, first, done)


def run_kwok_bench(tmp_path_factory: pytest.TempPathFactory,
                   capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    """Both rollouts on one control plane, one after the other; prints and returns the numbers."""
    try:
        tools = locate_tools()
    except RuntimeError as error:
        pytest.fail(f"BENCH_KWOK=1 asks for the KWOK bench, but {error}", pytrace=False)
    results: dict[str, dict[str, Any]] = {}
    with running_control_plane(tools, tmp_path_factory.mktemp("bench-staged-plane")) as plane:
        admin = plane.client()
        _apply(admin, [*_objects(VERSIONS[0], None), *_nodes()])
        for (mode, rollout), (old, new) in zip((("single-daemonset", None), ("staged", ROLLOUT)),
                                               zip(VERSIONS, VERSIONS[1:])):
            results[mode] = _rollout(plane, admin, tmp_path_factory.mktemp(f"bench-{mode}"), old, new, rollout)
    _check_stages(results["staged"])
    with capsys.disabled():
        print(f"\n  KWOK, {NODES} nodes in pools {pools(NODES)}, maxParallelUpgrades {PARALLEL}, soak {SOAK} s:")
        for mode, numbers in results.items():
            print(f"  {mode:>16}: {numbers['seconds_to_done']:.0f} s to done; controller {numbers['rounds']:.0f} "
                  f"rounds, {numbers['cpu_s']:.1f} s CPU, {numbers['cpu_ms_per_round']:.1f} ms CPU per round")
    return results
