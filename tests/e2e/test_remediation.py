"""GPU fault remediation end to end: KWOK GPU nodes, our health monitor agents on simulated NVML with injected
faults, and the operator controller in `enforce` mode, each with the token of its rendered ServiceAccount.

The scenarios of issue 26's acceptance, on a control plane of their own:

* XID 79 -> cordon -> drain -> reboot (the simulated node writes a new bootID) -> validation -> uncordon;
* XID 48 -> the reset path (cordon, partial drain, GPU reset by the node agent, validation);
* a reset that fails -> a reboot; the third fault within the attempts window -> `needs-human`;
* XIDs 13/31/43/45 and NVML errors while the driver starts quarantine nothing;
* a node cordoned by a person stays cordoned; a node in a driver upgrade is not remediated;
* a pool breaker of 2 defers the third node of its pool with an Event, and uncordons go on while it holds;
* 50 faults at once with `maxConcurrent: 5`: never more than 5 nodes remediating;
* the leader killed at every stage: no stage repeated, no reboot doubled, no stale fault replayed.

The agents run as local processes, one per node of the agent scenarios (`rem-h-*`); for the pool and fleet
scenarios (`rem-a-*`, `bulk-*`) the test plays the node side itself (`NodeSide`: the conditions a monitor writes,
a reboot's new bootID, a reset's result), since 50 agent processes would not fit the machine; the agents' own
part is what the agent scenarios test.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube.resources.core_v1 import Event, Node, Pod
from lightkube.types import PatchType

from gpu_operator.config import parse_config
from gpu_operator.render import render
from tests.e2e.agents import AGENT, service_account_token
from tests.e2e.apply import KindTable, server_side_apply
from tests.e2e.background import BackgroundLoop
from tests.e2e.control_plane import KWOK_ANNOTATION, ControlPlane, running_control_plane, stop_process_group
from tests.e2e.controller_fleet import gpu_pod, log_tail, start_controller
from tests.e2e.nodes import FLEET_CONFIG
from tests.e2e.rbac import audited_requests, forbidden
from tests.e2e.report import note
from tests.e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

NS = "gpu-operator"
STATE = "nvidia.com/gpu-remediation.state"
UPGRADE = "nvidia.com/gpu-driver-upgrade-state"
POOL = "kubernetes.azure.com/agentpool"
AGENT_NODES = [f"rem-h-{i:02d}" for i in range(8)]
POOL_NODES = [f"rem-a-{i:02d}" for i in range(3)]
BULK_NODES = [f"bulk-{i:03d}" for i in range(50)]
REMEDIATING = {"draining", "resetting", "rebooting", "reimaging", "repairing", "validating"}
Object = dict[str, Any]
#: The controller's leader election, short, so that the leader-kill scenario does not wait 15 s a stage.
FAST_LEASE = ("--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s")


def _document() -> Object:
    document = yaml.safe_load(FLEET_CONFIG.read_text())
    document["namespace"] = NS
    document["operator"].setdefault("driver", {})["version"] = "595.91.07"
    document["operator"]["driver"]["upgradePolicy"] = {"maxParallelUpgrades": 5, "maxUnavailable": "100%"}
    document["controller"] = {"validationTimeoutSeconds": 3600, "resyncSeconds": 30}
    document["remediation"] = {
        "mode": "enforce",
        "attempts": {"max": 2, "windowSeconds": 3600},
        "minRebootIntervalSeconds": 0,
        "maxConcurrent": 5,
        "breaker": {"maxNodes": 60, "maxPercent": 100},
        "pools": {"a100mig": {"breaker": {"maxNodes": 2}}},
        "drain": {"mode": "evict", "timeoutSeconds": 120},
    }
    return document


def _objects() -> list[Object]:
    """The controller's objects, the health monitor's RBAC, and the driver and validator DaemonSets."""
    kept = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap",
            "RuntimeClass"}
    chosen = []
    for obj in render(parse_config(_document())):
        name, kind = obj["metadata"]["name"], obj["kind"]
        ours = name.startswith(("gpu-operator", "gpu-health-monitor")) or kind in ("Namespace", "RuntimeClass")
        if (kind in kept and (ours or kind == "ServiceAccount")) or name in (
                "nvidia-driver-daemonset", "nvidia-operator-validator"):
            chosen.append(obj)
    return chosen


def _node(name: str, pool: str) -> Object:
    resources = {"cpu": "96", "memory": "1800Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]},
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok",
                                    "feature.node.kubernetes.io/pci-10de.present": "true", POOL: pool}},
            "status": {"capacity": resources, "allocatable": resources}}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Cluster:
    """The plane, its admin client, and helpers to read and change nodes."""

    def __init__(self, plane: ControlPlane, workdir: Path) -> None:
        self.plane, self.workdir, self.admin = plane, workdir, plane.client()
        self.controllers: list[Any] = []
        self.monitors: dict[str, Any] = {}

    def apply(self, objects: list[Object]) -> None:
        failures = server_side_apply(self.admin, objects, KindTable(), dry_run=False, field_manager="e2e-remediation")
        assert not failures, "\n".join(map(str, failures))

    def node(self, name: str) -> Any:
        return self.admin.get(Node, name)

    def state(self, name: str) -> str:
        return (self.node(name).metadata.labels or {}).get(STATE, "")

    def conditions(self, name: str) -> dict[str, Any]:
        return {c.type: c for c in self.node(name).status.conditions or ()}

    def start_controller(self, *extra: str) -> Any:
        workdir = self.workdir / f"controller-{len(self.controllers)}"
        workdir.mkdir()
        process = start_controller(self.plane, self.admin, workdir, *FAST_LEASE, *extra)
        self.controllers.append(process)
        return process

    def start_monitor(self, node: str, *, validations_dir: str = "", grace: int = 0) -> Path:
        workdir = self.workdir / f"monitor-{node}"
        workdir.mkdir(exist_ok=True)
        faults = workdir / "faults"
        faults.touch()
        token = service_account_token(self.admin, NS, "gpu-health-monitor")
        kubeconfig = self.plane.write_kubeconfig(workdir / "kubeconfig", token)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), "PYTHONUNBUFFERED": "1",
               "KUBECONFIG": str(kubeconfig), "NODE_NAME": node, "GPU_OPERATOR_NVML": "fake:h100-8x",
               "GPU_OPERATOR_NVML_FAULTS": str(faults), "VALIDATIONS_DIR": validations_dir,
               "STARTUP_GRACE_SECONDS": str(grace), "HEALTH_INTERVAL_SECONDS": "1"}
        log = (workdir / "monitor.log").open("a")
        process = subprocess.Popen([str(AGENT), "health-monitor"], env=env, cwd=workdir, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        process.log_path = workdir / "monitor.log"  # type: ignore[attr-defined]
        self.monitors[node] = process
        wait_until(lambda: "GPUFallenOffBus" in self.conditions(node), timeout=60,
                   what=f"the health monitor of {node} to write its conditions")
        return faults

    def stop_all(self) -> None:
        for process in [*self.controllers, *self.monitors.values()]:
            stop_process_group(process)


@pytest.fixture(scope="module")
def cluster(e2e_tools: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_control_plane(e2e_tools, tmp_path_factory.mktemp("remediation-plane")) as plane:
        cluster = Cluster(plane, tmp_path_factory.mktemp("remediation"))
        nodes = [*(_node(n, "h100") for n in [*AGENT_NODES, *BULK_NODES]), *(_node(n, "a100mig") for n in POOL_NODES)]
        cluster.apply([*_objects(), *nodes])
        names = [n["metadata"]["name"] for n in nodes]
        wait_until(lambda: all(any(c.type == "Ready" and c.status == "True" for c in
                                   (cluster.node(n).status.conditions or ())) for n in names),
                   timeout=120, what="KWOK to make every node Ready")
        for name in names:  # a kubelet reports its boot; KWOK does not: without one no reboot could be told
            cluster.admin.patch(Node.Status, name, {"status": {"nodeInfo": {"bootID": str(uuid.uuid4())}}},
                                patch_type=PatchType.STRATEGIC)
        cluster.apply([gpu_pod(name) for name in names])
        cluster.start_controller()
        wait_until(lambda: all((cluster.node(n).metadata.labels or {}).get(UPGRADE) == "upgrade-done" for n in names),
                   timeout=240, what="every node labelled and upgrade-done on its driver")
        try:
            yield cluster
        finally:
            cluster.stop_all()


class Timeline(BackgroundLoop):
    """A node's remediation states and schedulability as sampled (0.1 s), with when each was first seen."""

    def __init__(self, cluster: Cluster, node: str) -> None:
        super().__init__()
        self.cluster, self.name = cluster, node
        self.states: list[tuple[float, str]] = []
        self.cordoned_at: float | None = None
        self.boot_ids: list[str] = []

    def run(self) -> None:
        while not self.stop.wait(0.1):
            try:
                node = self.cluster.node(self.name)
            except Exception:
                continue
            state = (node.metadata.labels or {}).get(STATE, "")
            if not self.states or self.states[-1][1] != state:
                self.states.append((time.monotonic(), state))
            if node.spec.unschedulable and self.cordoned_at is None:
                self.cordoned_at = time.monotonic()
            boot = node.status.nodeInfo.bootID if node.status and node.status.nodeInfo else ""
            if not self.boot_ids or self.boot_ids[-1] != boot:
                self.boot_ids.append(boot)

    def sequence(self) -> list[str]:
        return [state for _, state in self.states]



def _inject(faults: Path, line: str) -> float:
    with faults.open("a") as out:
        out.write(line + "\n")
    return time.monotonic()


def _recovered(cluster: Cluster, node: str) -> Callable[[], bool]:
    def done() -> bool:
        current = cluster.node(node)
        return not (current.metadata.labels or {}).get(STATE) and not current.spec.unschedulable
    return done


def _fail(cluster: Cluster, node: str, error: Exception, timeline: Timeline | None = None) -> None:
    processes = [("controller", cluster.controllers[-1])] + ([("monitor", cluster.monitors[node])]
                                                             if node in cluster.monitors else [])
    logs = "\n".join(f"--- {name} ---\n{log_tail(process)}" for name, process in processes)
    seen = timeline.sequence() if timeline else []
    notes = {k: v for k, v in (cluster.node(node).metadata.annotations or {}).items() if "remediation" in k}
    events = [f"{e.reason}: {e.message}" for e in cluster.admin.list(Event, namespace="default")
              if e.involvedObject.name == node][-12:]
    pytest.fail(f"{error}\nstates seen on {node}: {seen}\nannotations: {notes}\nevents:\n" + "\n".join(events)
                + f"\n{logs}", pytrace=False)


# --- the agent scenarios ---------------------------------------------------------------------------------------


def test_xid_79_cordons_drains_reboots_validates_and_uncordons(cluster: Cluster) -> None:
    node = AGENT_NODES[0]
    faults = cluster.start_monitor(node)
    with Timeline(cluster, node) as timeline:
        injected = _inject(faults, "xid 79 on GPU 2")
        try:
            wait_until(lambda: "rebooting" in timeline.sequence(), timeout=90, what="the reboot", interval=0.2)
            wait_until(_recovered(cluster, node), timeout=180, what=f"{node} validated and uncordoned")
        except TimeoutError as error:
            _fail(cluster, node, error, timeline)
    sequence = [s for s in timeline.sequence() if s]
    assert sequence == ["quarantined", "draining", "rebooting", "validating"], sequence
    assert len(set(timeline.boot_ids)) == 2, f"one reboot, one new bootID: {timeline.boot_ids}"
    assert cluster.conditions(node)["GPUFallenOffBus"].status == "False"
    assert not [p for p in cluster.admin.list(Pod, namespace="default") if p.spec.nodeName == node
                and p.metadata.name.startswith("train-")], "the GPU pod was not drained"
    latency = (timeline.cordoned_at or 0) - injected
    note(f"remediation: XID 79 on {node}: cordon {latency:.2f} s after the injected NVML event, then drain, "
         f"reboot (new bootID), validation, uncordon: {' -> '.join(sequence)} -> healthy")


def test_xid_48_takes_the_reset_path(cluster: Cluster) -> None:
    node = AGENT_NODES[1]
    faults = cluster.start_monitor(node)
    with Timeline(cluster, node) as timeline:
        _inject(faults, "xid 48 on GPU 1")
        try:
            wait_until(lambda: cluster.state(node) != "", timeout=60, what=f"{node} taken", interval=0.2)
            wait_until(_recovered(cluster, node), timeout=180, what=f"{node} reset, validated and uncordoned")
        except TimeoutError as error:
            _fail(cluster, node, error, timeline)
    sequence = [s for s in timeline.sequence() if s]
    assert "resetting" in sequence and "rebooting" not in sequence, sequence
    assert len(set(timeline.boot_ids)) == 1, "a reset does not reboot"
    history = json.loads(cluster.node(node).metadata.annotations["nvidia.com/gpu-remediation.history"])
    assert {"action": "reset-gpu", "result": "success"}.items() <= history[-2].items(), history
    note(f"remediation: XID 48 on {node}: {' -> '.join(sequence)} -> healthy, no reboot")


def test_a_failed_reset_goes_on_to_a_reboot(cluster: Cluster) -> None:
    node = AGENT_NODES[2]
    faults = cluster.start_monitor(node)
    with Timeline(cluster, node) as timeline:
        _inject(faults, "reset-fails on GPU 1")
        _inject(faults, "xid 48 on GPU 1")
        try:
            wait_until(lambda: "rebooting" in timeline.sequence(), timeout=120, what="the reboot", interval=0.2)
            wait_until(_recovered(cluster, node), timeout=240, what=f"{node} rebooted after the failed reset")
        except TimeoutError as error:
            _fail(cluster, node, error, timeline)
    sequence = [s for s in timeline.sequence() if s]
    assert sequence.index("resetting") < sequence.index("rebooting"), sequence
    assert len(set(timeline.boot_ids)) == 2
    note(f"remediation: a failed reset on {node} went on to a reboot: {' -> '.join(sequence)}")


def test_the_third_fault_in_the_window_needs_a_human(cluster: Cluster) -> None:
    node = AGENT_NODES[3]
    faults = cluster.start_monitor(node)
    with Timeline(cluster, node) as timeline:
        try:
            for attempt in (1, 2):
                _inject(faults, "xid 79 on GPU 0")
                wait_until(lambda: timeline.sequence().count("rebooting") == attempt, timeout=90,
                           what=f"reboot {attempt}", interval=0.2)
                wait_until(_recovered(cluster, node), timeout=180, what=f"recovery {attempt}")
            _inject(faults, "xid 79 on GPU 0")
            wait_until(lambda: cluster.state(node) == "needs-human", timeout=90, what="needs-human")
        except TimeoutError as error:
            _fail(cluster, node, error, timeline)
        time.sleep(5)
    current = cluster.node(node)
    assert current.spec.unschedulable and current.metadata.labels[STATE] == "needs-human"
    assert len(set(timeline.boot_ids)) == 3, f"two reboots, not a third: {timeline.boot_ids}"
    note(f"remediation: the third XID 79 on {node} within the attempts window (max 2) -> needs-human, cordoned")


def test_application_xids_and_start_up_errors_quarantine_nothing(cluster: Cluster, tmp_path: Path) -> None:
    node = AGENT_NODES[4]
    validations = tmp_path / "validations"
    validations.mkdir()
    faults_file = cluster.workdir / f"monitor-{node}" / "faults"
    faults_file.parent.mkdir(exist_ok=True)
    faults_file.write_text("driver-unloaded\n")  # NVML fails while the operands start
    cluster.start_monitor(node, validations_dir=str(validations), grace=2)
    time.sleep(3)  # health passes with NVML failing, before the driver's validation
    _inject(faults_file, "driver-loaded")
    (validations / "driver-ready").write_text("")
    time.sleep(5)  # the next health pass opens NVML again (an XID before that is not delivered, as on a real node)
    for code in (13, 31, 43, 45):
        _inject(faults_file, f"xid {code} on GPU 4")

    def reported() -> set[str]:
        return {e.reason for e in cluster.admin.list(Event, namespace="default") if e.involvedObject.name == node}

    wait_until(lambda: {"XID13", "XID31", "XID43", "XID45"} <= reported(), timeout=60,
               what="the application XIDs reported as Events")
    time.sleep(3)
    assert cluster.state(node) == "" and not cluster.node(node).spec.unschedulable
    true = [t for t, c in cluster.conditions(node).items() if t.startswith("GPU") and c.status == "True"]
    assert true == [], true
    note(f"remediation: XIDs 13/31/43/45 and NVML errors before the driver's validation on {node}: Events only")


def test_a_node_a_person_cordoned_stays_cordoned(cluster: Cluster) -> None:
    node = AGENT_NODES[5]
    cluster.admin.patch(Node, node, {"spec": {"unschedulable": True}}, patch_type=PatchType.MERGE)
    faults = cluster.start_monitor(node)
    with Timeline(cluster, node) as timeline:
        _inject(faults, "xid 79 on GPU 5")
        try:
            wait_until(lambda: "validating" in timeline.sequence(), timeout=180, what="the repair")
            wait_until(lambda: cluster.state(node) == "", timeout=120, what="the remediation to end")
        except TimeoutError as error:
            _fail(cluster, node, error, timeline)
    assert cluster.node(node).spec.unschedulable, "the person's cordon was lifted"
    note(f"remediation: {node}, cordoned by a person, was repaired and left cordoned")


def test_a_node_in_a_driver_upgrade_is_not_remediated(cluster: Cluster) -> None:
    node = AGENT_NODES[6]  # its validator never turns Ready (kwok-stages/validator-never-ready.yaml)
    cluster.admin.patch(Node, node, {"metadata": {"labels": {UPGRADE: "validation-required"}}},
                        patch_type=PatchType.MERGE)
    faults = cluster.start_monitor(node)
    _inject(faults, "xid 79 on GPU 1")
    wait_until(lambda: cluster.conditions(node)["GPUFallenOffBus"].status == "True", timeout=30, what="the fault")
    time.sleep(6)
    assert cluster.state(node) in ("", "observing"), "a node the upgrade holds was remediated"
    current = cluster.node(node)
    assert "nvidia.com/gpu-remediation.cordoned" not in (current.metadata.annotations or {})
    assert (current.metadata.labels or {}).get(UPGRADE) == "validation-required"
    cluster.admin.patch(Node, node, {"metadata": {"labels": {UPGRADE: "upgrade-done"}}}, patch_type=PatchType.MERGE)
    wait_until(lambda: cluster.state(node) not in ("", "observing"), timeout=30,
               what="the remediation once the upgrade let go")
    note(f"remediation: {node} waited while its driver upgrade held it, then was quarantined")


# --- the node side played by the test --------------------------------------------------------------------------


class NodeSide(BackgroundLoop):
    """What the health monitors of nodes without an agent process would do: `fault` writes a fault condition;
    running, it answers a reboot request with a new bootID and the condition cleared (a simulated reboot)."""

    def __init__(self, cluster: Cluster, nodes: list[str]) -> None:
        super().__init__()
        self.cluster, self.nodes = cluster, set(nodes)
        self.answered: set[str] = set()
        self.reboots: dict[str, int] = {}

    def fault(self, node: str) -> None:
        condition = {"type": "GPUFallenOffBus", "status": "True", "reason": "XID79", "lastTransitionTime": _now(),
                     "lastHeartbeatTime": _now(),
                     "message": f'GPU-{uuid.uuid4()} (0000:17:00.0): XID 79 "GPU has fallen off the bus": RESTART_BM'}
        self._status(node, {"conditions": [condition]})

    def _status(self, node: str, status: Object) -> None:
        self.cluster.admin.patch(Node.Status, node, {"status": status}, patch_type=PatchType.STRATEGIC)

    def run(self) -> None:
        while not self.stop.wait(0.3):
            try:
                nodes = [n for n in self.cluster.admin.list(Node) if n.metadata.name in self.nodes]
            except Exception:
                continue
            for node in nodes:
                request = (node.metadata.annotations or {}).get("nvidia.com/gpu-remediation.reboot-request")
                if request and request not in self.answered:
                    self.answered.add(request)
                    self.reboots[node.metadata.name] = self.reboots.get(node.metadata.name, 0) + 1
                    cleared = {"type": "GPUFallenOffBus", "status": "False", "reason": "NoFault", "message": "",
                               "lastTransitionTime": _now(), "lastHeartbeatTime": _now()}
                    self._status(node.metadata.name, {"nodeInfo": {"bootID": str(uuid.uuid4())},
                                                      "conditions": [cleared]})



def test_a_pool_breaker_of_2_defers_the_third_node_and_uncordons_go_on(cluster: Cluster) -> None:
    first, second, third = POOL_NODES
    side = NodeSide(cluster, POOL_NODES)  # not answering yet: the first two stay quarantined, the breaker holds
    for node in (first, second):
        side.fault(node)
    wait_until(lambda: all(cluster.node(n).spec.unschedulable for n in (first, second)), timeout=30,
               what="two nodes of the pool quarantined")
    side.fault(third)
    wait_until(lambda: cluster.state(third) == "deferred", timeout=30, what="the third node deferred")
    assert not cluster.node(third).spec.unschedulable
    events = [e for e in cluster.admin.list(Event, namespace="default") if e.involvedObject.name == third]
    assert any("breaker of pool a100mig" in (e.message or "") for e in events), [e.message for e in events]
    with side:
        wait_until(_recovered(cluster, first), timeout=180, what=f"{first} uncordoned while the breaker held")
        wait_until(lambda: cluster.state(third) != "deferred", timeout=120, what="the breaker to let go")
        wait_until(lambda: all(_recovered(cluster, n)() for n in POOL_NODES), timeout=240, what="the pool recovered")
    note("remediation: a pool breaker of 2 deferred the third node with an Event naming it; the first two were "
         "repaired and uncordoned while it held, and it let go by itself")


def test_fifty_faults_never_more_than_five_remediating(cluster: Cluster) -> None:
    worst: list[int] = [0]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.2):
            try:
                states = [(n.metadata.labels or {}).get(STATE, "") for n in cluster.admin.list(Node)
                          if n.metadata.name in BULK_NODES]
            except Exception:
                continue
            worst[0] = max(worst[0], sum(s in REMEDIATING for s in states))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    with NodeSide(cluster, BULK_NODES) as side:
        for node in BULK_NODES:
            side.fault(node)
        try:
            wait_until(lambda: sum(cluster.state(n) != "" for n in BULK_NODES) >= 25, timeout=60, interval=1,
                       what="the faults taken")
            wait_until(lambda: all(_recovered(cluster, n)() for n in BULK_NODES), timeout=600, interval=2,
                       what="the 50 nodes repaired")
        except TimeoutError as error:
            _fail(cluster, BULK_NODES[0], error)
        reboots = dict(side.reboots)
    sampling.set()
    sampler.join()
    assert worst[0] <= 5, f"{worst[0]} nodes remediating at once"
    assert sorted(reboots.values()) == [1] * 50, "a node was rebooted twice"
    note(f"remediation: 50 simultaneous XID 79 faults at maxConcurrent 5: at most {worst[0]} remediating at once, "
         f"each node rebooted once, all back in {time.monotonic() - started:.0f} s")


def test_the_leader_killed_at_every_stage(cluster: Cluster) -> None:
    """A standby replica always runs; at each new state of the node the leader is SIGKILLed and a new standby
    started. No state is seen twice, the node reboots once, and the fault is not replayed after its recovery."""
    node = AGENT_NODES[7]
    faults = cluster.start_monitor(node)
    standby = cluster.start_controller()
    kills: list[str] = []
    with Timeline(cluster, node) as timeline:
        _inject(faults, "xid 79 on GPU 6")
        deadline = time.monotonic() + 300
        seen = 0
        while time.monotonic() < deadline and not (timeline.sequence()[-1:] == [""] and len(timeline.states) > 1):
            if len(timeline.states) > seen and timeline.sequence()[-1]:
                seen = len(timeline.states)
                leader = next(p for p in cluster.controllers if p.poll() is None and p is not standby)
                os.killpg(leader.pid, signal.SIGKILL)
                leader.wait()
                kills.append(timeline.sequence()[-1])
                standby = cluster.start_controller()
            time.sleep(0.1)
        time.sleep(8)  # a replayed fault would show by now
    sequence = [s for s in timeline.sequence() if s]
    assert timeline.sequence()[-1] == "", f"{node} did not recover: {timeline.sequence()}"
    assert len(sequence) == len(set(sequence)), f"a stage was repeated: {sequence}"
    assert len(set(timeline.boot_ids)) == 2, f"the reboot was doubled: {timeline.boot_ids}"
    note(f"remediation: the leader SIGKILLed at every stage ({', '.join(kills)}): no stage repeated "
         f"({' -> '.join(sequence)}), one reboot, no replay after recovery")


def test_the_rendered_rbac_is_enough(cluster: Cluster) -> None:
    for account in ("gpu-operator", "gpu-health-monitor"):
        requests = audited_requests(cluster.plane.audit_events(f"system:serviceaccount:{NS}:{account}"))
        assert requests and not forbidden(requests), (account, forbidden(requests)[:5])
    note("remediation RBAC: the controller and the health monitors made every request with their rendered "
         "ServiceAccounts' tokens; none refused")
