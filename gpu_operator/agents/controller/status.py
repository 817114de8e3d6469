"""A readable status of the GPU stack: ready or not, per operand and per node, with the reason.

NVIDIA writes its status into the ClusterPolicy (`state: ready|notReady`); we render no ClusterPolicy, so the
controller keeps the same facts in a ConfigMap anyone can read (`kubectl -n <ns> get configmap
gpu-operator-status -o yaml`): `state`, a one-line `summary`, and YAML tables `operands` (desired / ready /
updated pods of each operand DaemonSet) and `nodes` (each GPU node's deployed and paused operands and its driver
upgrade state, with the reason when something is wrong), and with a staged rollout its gate's last decision
(`rollout`, JSON: stages, phases, what it waits on, a halt's reason, the memory a new leader carries on from). The
same census feeds NVIDIA's `gpu_operator_*` gauges.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from gpu_operator.agents.controller.cluster_state import ClusterState, DaemonSetFacts
from gpu_operator.remediation import NodeStep
from gpu_operator.labels import DEPLOY_LABEL_PREFIX, GPU_PRESENT_LABEL, OPERANDS_SWITCH
from gpu_operator.upgrade import IN_PROGRESS, STATE_LABEL, NodeObservation, State
from gpu_operator.upgrade.observation import FAILURE_ANNOTATION
from gpu_operator.upgrade.stages import STATUS_KEY, StageDecision

__all__ = ["STATUS_CONFIG_MAP", "Census", "census", "operand_status", "status_data"]

STATUS_CONFIG_MAP = "gpu-operator-status"


@dataclass(frozen=True)
class Census:
    """NVIDIA's upgrade gauges and ours: how many nodes are where."""

    gpu_nodes: int
    in_progress: int
    done: int
    failed: int
    pending: int
    available: int
    operands_ready: bool


def _operand(ds: DaemonSetFacts) -> dict[str, Any]:
    ready = ds.ready >= ds.desired and ds.updated >= ds.desired
    entry: dict[str, Any] = {"desired": ds.desired, "ready": ds.ready, "updated": ds.updated, "state":
                             "ready" if ready else "notReady"}
    if not ready:
        entry["reason"] = (f"{ds.desired - ds.ready} of {ds.desired} pods not ready" if ds.ready < ds.desired
                           else f"{ds.desired - ds.updated} of {ds.desired} pods on an older template")
    return entry


def operand_status(daemonsets: Iterable[DaemonSetFacts]) -> dict[str, dict[str, Any]]:
    return {ds.name: _operand(ds) for ds in sorted(daemonsets, key=lambda d: d.name)}


def _node(labels: Mapping[str, str], annotations: Mapping[str, str], unschedulable: bool) -> dict[str, Any]:
    deploy = {key.removeprefix(DEPLOY_LABEL_PREFIX): value for key, value in labels.items()
              if key.startswith(DEPLOY_LABEL_PREFIX) and key != OPERANDS_SWITCH}
    entry: dict[str, Any] = {
        "operands": sorted(name for name, value in deploy.items() if value == "true"),
        "upgrade": labels.get(STATE_LABEL, ""),
    }
    paused = sorted(f"{name}={value}" for name, value in deploy.items() if value not in ("true", "false"))
    if paused:
        entry["paused"] = paused
    if labels.get(STATE_LABEL) == State.FAILED.value:
        entry["reason"] = annotations.get(FAILURE_ANNOTATION, "driver upgrade failed")
    elif labels.get(OPERANDS_SWITCH) == "false":
        entry["reason"] = "operands turned off (nvidia.com/gpu.deploy.operands=false)"
    elif unschedulable and labels.get(STATE_LABEL) not in {s.value for s in IN_PROGRESS}:
        entry["reason"] = "cordoned"
    return entry


def census(state: ClusterState, observations: Iterable[NodeObservation], max_parallel: int,
           operands: Mapping[str, Mapping[str, Any]]) -> Census:
    """The counts over the managed nodes (those with a driver pod, as NVIDIA's), given the operands' status
    (:func:`operand_status`)."""
    states = Counter(node.state for node in observations if not node.skip and node.driver_pod_present)
    gpu_nodes = sum(node.labels.get(GPU_PRESENT_LABEL) == "true" for node in state.nodes.values())
    in_progress = sum(states[s] for s in IN_PROGRESS)
    pending = states[State.REQUIRED]
    room = pending if not max_parallel else max(0, min(pending, max_parallel - in_progress))
    ready = all(entry["state"] == "ready" for entry in operands.values())
    return Census(gpu_nodes, in_progress, states[State.DONE], states[State.FAILED], pending, room, ready)


def _remediation(steps: Iterable[NodeStep]) -> dict[str, dict[str, Any]]:
    """Each node under remediation: its state, fault, GPUs, the rung under way and the next step (for `diag`)."""
    table: dict[str, dict[str, Any]] = {}
    for step in sorted(steps, key=lambda s: s.node):
        if not step.state and not step.fault_class:
            continue
        entry: dict[str, Any] = {"state": step.state or "healthy", "pool": step.pool, "fault": step.fault_class or "",
                                 "reason": step.reason, "gpus": list(step.gpus), "next": step.next_step}
        if step.action:
            entry["action"] = step.action
        if step.dry_run:
            entry["dryRun"] = True
        if step.problems:
            entry["problems"] = list(step.problems)
        table[step.node] = entry
    return table


def status_data(state: ClusterState, summary: Census, operands: Mapping[str, Mapping[str, Any]],
                remediation: Iterable[NodeStep] = (), rollout: StageDecision | None = None) -> dict[str, str]:
    """The status ConfigMap's data (with `rollout` when a staged rollout runs)."""
    nodes = {name: _node(node.labels, node.annotations, node.unschedulable)
             for name, node in sorted(state.nodes.items()) if node.labels.get(GPU_PRESENT_LABEL) == "true"}
    ready = summary.operands_ready and summary.failed == 0 and summary.in_progress == 0 and summary.pending == 0
    not_ready = [name for name, entry in operands.items() if entry["state"] != "ready"]
    words = [f"{summary.gpu_nodes} GPU nodes", f"upgrades: {summary.done} done, {summary.in_progress} in progress, "
             f"{summary.pending} pending, {summary.failed} failed"]
    if not_ready:
        words.append("not ready: " + ", ".join(not_ready))
    remediating = _remediation(remediation)
    if remediating:
        words.append(f"remediation: {len(remediating)} nodes")
    if rollout is not None and (rollout.halted or rollout.active):
        words.append(f"driver rollout {'halted' if rollout.halted else 'at stage ' + str(rollout.active)}: "
                     f"{rollout.waiting_on}")
    staged = {STATUS_KEY: json.dumps(rollout.to_dict(), sort_keys=True)} if rollout is not None else {}
    return {
        "state": "ready" if ready else "notReady",
        "summary": "; ".join(words),
        "operands": yaml.safe_dump(operands, sort_keys=True),
        "nodes": yaml.safe_dump(nodes, sort_keys=True),
        "remediation": yaml.safe_dump(remediating, sort_keys=True),
        **staged,
    }
