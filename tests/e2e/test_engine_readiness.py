"""`DriverRollout` and `MofedReadiness` under the real engine: `pulumi up` of `stacks/` waits, and fails with reasons.

DriverRollout (a control plane of its own, three KWOK GPU nodes carrying only NFD's PCI label, as in
test_controller): `up` with `controller.waitForDriverRollout` off; the operator controller then runs as a local
process with a token of its rendered ServiceAccount and its rendered settings, labels the nodes, and the driver pods
run. A `driver.version` change with the wait on, one node's upgrade held in `validation-required` (its validator
off until a thread turns it back on, some seconds later): `up` returns only after that release, once every node is
`upgrade-done` on the DaemonSet's newest template (read right after `up` returns; a watcher times the last node
against `up`'s end), and the DriverRollout step is the last to finish. Then one node's validator goes away (its deploy label set to
`false`) and the version changes again: the controller marks the node `upgrade-failed`, and `up` fails with the
node and its reason.

MofedReadiness (the engine fleet's plane and nodes, plus three KWOK InfiniBand nodes with
`network.nvidia.com/operator.mofed.wait=true`; the Network Operator chart installs from its published .tgz, nothing
acts on the NicClusterPolicy): `up` waits while the nodes wait; a thread flips them to `false` a few seconds after
the NicClusterPolicy exists, and `up` returns after the flip, with the GPU operator created after the wait. A change
of the NicClusterPolicy's spec, with one node waiting again, makes `up` wait again and fail at the deadline naming
that node.

Every thread and process started here is stopped, within a bounded time, whatever happens.
"""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.generic_resource import create_global_resource
from lightkube.resources.apps_v1 import ControllerRevision
from lightkube.resources.core_v1 import ConfigMap, Node, Pod

from gpu_operator.readiness import IB_NODE_LABEL, MOFED_WAIT_LABEL
from gpu_operator.render.helm_chart import merge_values
from gpu_operator.upgrade.revisions import REVISION_LABEL, newest_revisions
from gpu_operator.upgrade.state_machine import FAILURE_ANNOTATION, STATE_LABEL
from tests.e2e.agents import AGENT, service_account_token
from tests.e2e.apply import KindTable, server_side_apply
from tests.e2e.control_plane import KWOK_ANNOTATION, ControlPlane, free_port
from tests.e2e.engine import Engine, EngineError, EngineStack
from tests.e2e.engine_fleet import (  # noqa: F401 - module fixtures
    base_document,
    chart_file,
    cluster,
    engine,
    engine_plane,
    plane,
    register_nodes,
)
from tests.e2e.report import note
from tests.e2e.waiting import wait_until
from tests.support.reference import REPO_ROOT

pytestmark = pytest.mark.e2e

NAMESPACE = "gpu-operator"
DRIVER_APP = "nvidia-driver-daemonset"
VALIDATOR_APP = "nvidia-operator-validator"
#: What kwok-stages/validator-labelled-never-ready.yaml selects: a validator pod Running, never Ready.
NEVER_READY_LABEL = ("e2e.pulumi-gpu-operator/validator", "never-ready")
VALIDATOR_LABEL = "nvidia.com/gpu.deploy.operator-validator"
AGENTS_IMAGE = {"repository": "ghcr.io/pulumi-gpu-operator/agents", "tag": "0.1.0"}  # tests/e2e/fleet.yaml's
DYNAMIC_TYPE = "pulumi-python:dynamic:Resource"
#: The versions the rollout goes through: installed, upgraded, upgraded again with a node failing.
VERSIONS = ("595.91.07", "595.100.01", "595.100.02")
GPU_NODES = [f"gpu-rollout-{i}" for i in range(3)]
HELD, FAILING = GPU_NODES[0], GPU_NODES[1]
#: How long a node's validator may take after its new driver; the held node's comes back well within it.
VALIDATION_TIMEOUT, HOLD = 40, 10
IB_NODES = [f"ib-mofed-{i}" for i in range(3)]
MOFED_TIMEOUT = 60  # the least network.mofedTimeoutSeconds accepts
Object = dict[str, Any]
NicClusterPolicy = create_global_resource("mellanox.com", "v1alpha1", "NicClusterPolicy", "nicclusterpolicies")


def _stop(process: subprocess.Popen[Any], grace: float = 15) -> None:
    """SIGTERM to the process group, SIGKILL after `grace` seconds."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=grace)


def _nodes(client: Client) -> dict[str, Any]:
    return {node.metadata.name: node for node in client.list(Node)}


def _pods(client: Client, app: str) -> list[Any]:
    return [pod for pod in client.list(Pod, namespace=NAMESPACE, labels={"app": app})
            if pod.metadata.deletionTimestamp is None]


class ConfiguredStack:
    """An engine stack of `stacks/` in kubeconfig mode on one control plane."""

    def __init__(self, stack: EngineStack, kubeconfig: str) -> None:
        self.stack, self.kubeconfig = stack, kubeconfig

    def configure(self, document: Object) -> None:
        self.stack.set_config({"gpu-operator:kubeconfig": self.kubeconfig, "gpu-operator:config": document})


# --- DriverRollout ---------------------------------------------------------------------------------------------


def _driver_document(version: str, wait: bool) -> Object:
    return {
        "namespace": NAMESPACE,
        "nfd": {"enabled": False},
        "agents": {"image": dict(AGENTS_IMAGE)},
        "operator": {"driver": {"version": version, "upgradePolicy": {
            "maxParallelUpgrades": len(GPU_NODES), "maxUnavailable": "100%",
            "podDeletion": {"timeoutSeconds": 5, "force": True}}}},
        "controller": {"waitForDriverRollout": wait, "rolloutTimeoutSeconds": 300, "validationTimeoutSeconds": VALIDATION_TIMEOUT,
                       "resyncSeconds": 60},
    }


def _gpu_node(name: str) -> Object:
    resources = {"cpu": "96", "memory": "1800Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]},
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok",
                                    "feature.node.kubernetes.io/pci-10de.present": "true"}},
            "status": {"capacity": resources, "allocatable": resources}}


class LocalController:
    """`gpu-operator-agent operator` as a local process, with a token of the rendered ServiceAccount and the
    rendered settings (as test_controller runs it); `stop()` is bounded and idempotent."""

    def __init__(self, plane: ControlPlane, admin: Client, workdir: Path) -> None:
        self.plane, self.admin, self.workdir = plane, admin, workdir
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "controller.log"

    def start(self) -> None:
        settings = self.admin.get(ConfigMap, "gpu-operator-controller", namespace=NAMESPACE).data["controller.json"]
        (self.workdir / "controller.json").write_text(settings)
        token = service_account_token(self.admin, NAMESPACE, "gpu-operator")
        kubeconfig = self.plane.write_kubeconfig(self.workdir / "kubeconfig", token)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.workdir), "PYTHONUNBUFFERED": "1",
               "KUBECONFIG": str(kubeconfig), "OPERATOR_NAMESPACE": NAMESPACE,
               "GPU_OPERATOR_CONTROLLER_CONFIG": str(self.workdir / "controller.json")}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [str(AGENT), "operator", f"--metrics-bind-address=127.0.0.1:{free_port()}",
                 f"--health-probe-bind-address=127.0.0.1:{free_port()}"],
                env=env, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)


class RolloutWatcher(threading.Thread):
    """Samples the GPU nodes while `up` runs: when every one was first seen `upgrade-done` on the driver
    DaemonSet's newest revision. Stopped (and joined, bounded) by `close()`."""

    def __init__(self, client: Client) -> None:
        super().__init__(daemon=True)
        self.client, self.halt = client, threading.Event()
        self.all_done_at: float | None = None
        self.samples = 0

    def run(self) -> None:
        while not self.halt.wait(0.25):
            try:
                done = _rolled_out(self.client)
            except Exception:  # noqa: BLE001, S112 - a list failed once (the client's transport errors too)
                continue
            self.samples += 1
            if done and self.all_done_at is None:
                self.all_done_at = time.monotonic()
            elif not done:
                self.all_done_at = None

    def close(self) -> None:
        self.halt.set()
        self.join(timeout=10)


class DelayedAction(threading.Thread):
    """What the cluster's other actors do during an `up`: once `seen()` holds (polled), `delay` seconds later,
    `act()` once. `seen_at` and `acted_at` are monotonic times; a failed act is kept in `error` for the test.
    Bounded: gives up after `timeout`; `close()` stops and joins it."""

    def __init__(self, seen: Callable[[], bool], act: Callable[[], None], delay: float, timeout: float = 240) -> None:
        super().__init__(daemon=True)
        self.seen, self.act, self.delay, self.timeout = seen, act, delay, timeout
        self.halt = threading.Event()
        self.seen_at: float | None = None
        self.acted_at: float | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        deadline = time.monotonic() + self.timeout
        while self.seen_at is None:
            if self.halt.wait(0.25) or time.monotonic() > deadline:
                return
            try:
                if self.seen():
                    self.seen_at = time.monotonic()
            except Exception:  # noqa: BLE001, S112 - a read failed (a CRD not served yet): read again
                continue
        if self.halt.wait(self.delay):
            return
        try:
            self.act()
            self.acted_at = time.monotonic()
        except Exception as error:  # noqa: BLE001 - reported by the test
            self.error = error

    def close(self) -> None:
        self.halt.set()
        self.join(timeout=15)


def validator_release(client: Client, node: str, hold: float) -> DelayedAction:
    """Holds one node's upgrade in `validation-required`: its validator is off (deploy label `false`) until, `hold`
    seconds after the node reached that state, it is turned back on."""
    return DelayedAction(
        lambda: (client.get(Node, node).metadata.labels or {}).get(STATE_LABEL) == "validation-required",
        lambda: client.patch(Node, node, {"metadata": {"labels": {VALIDATOR_LABEL: "true"}}}),
        hold)


def _validator_off(client: Client, node: str) -> None:
    client.patch(Node, node, {"metadata": {"labels": {VALIDATOR_LABEL: "false"}}})
    wait_until(lambda: node not in {p.spec.nodeName for p in _pods(client, VALIDATOR_APP)}, timeout=60,
               what=f"the validator pod on {node} to go away")


@contextlib.contextmanager
def _failing_validator(client: Client, node: str) -> Iterator[None]:
    """The node's DaemonSet validator turned off, and a validator pod of ours there that runs and never turns
    Ready (kwok-stages/validator-labelled-never-ready.yaml): a validation that keeps failing, which the controller
    times out (without any validator pod NVIDIA's validation manager waits without a clock, and so do we)."""
    _validator_off(client, node)
    pod = Pod.from_dict({
        "metadata": {"name": f"{VALIDATOR_APP}-failing", "namespace": NAMESPACE,
                     "labels": {"app": VALIDATOR_APP, NEVER_READY_LABEL[0]: NEVER_READY_LABEL[1]}},
        "spec": {"nodeName": node, "tolerations": [{"operator": "Exists"}],
                 "containers": [{"name": "validation", "image": "registry.invalid/never-ready:1"}]},
    })
    client.create(pod)
    try:
        yield
    finally:
        client.delete(Pod, pod.metadata.name, namespace=NAMESPACE, grace_period=0)


def _rollout_state(client: Client) -> dict[str, tuple[str, bool]]:
    """Per GPU node: its upgrade state, and whether its driver pod runs the DaemonSet's newest revision."""
    newest = newest_revisions(client.list(ControllerRevision, namespace=NAMESPACE)).get(DRIVER_APP)
    revisions = {pod.spec.nodeName: (pod.metadata.labels or {}).get(REVISION_LABEL) for pod in _pods(client, DRIVER_APP)}
    nodes = _nodes(client)
    return {name: ((nodes[name].metadata.labels or {}).get(STATE_LABEL, ""), bool(newest) and revisions.get(name) == newest)
            for name in GPU_NODES}


def _rolled_out(client: Client) -> bool:
    return all(state == "upgrade-done" and newest for state, newest in _rollout_state(client).values())


@pytest.fixture(scope="class")
def rollout_plane(e2e_tools: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of its own: the controller labels every node it sees."""
    with engine_plane(e2e_tools, tmp_path_factory.mktemp("rollout-plane")) as started:
        yield started


@pytest.fixture(scope="class")
def gpu_nodes(rollout_plane: ControlPlane) -> Client:
    admin = rollout_plane.client()
    register_nodes(admin, [_gpu_node(name) for name in GPU_NODES])
    return admin


@pytest.fixture(scope="class")
def rollout_stack(engine: Engine, rollout_plane: ControlPlane, gpu_nodes: Client) -> ConfiguredStack:
    project = engine.project("gpu-operator-rollout", REPO_ROOT / "stacks")
    return ConfiguredStack(engine.stack(project, "rollout"), rollout_plane.admin_kubeconfig.read_text())


@pytest.fixture(scope="class")
def controller(rollout_plane: ControlPlane, gpu_nodes: Client,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalController]:
    local = LocalController(rollout_plane, gpu_nodes, tmp_path_factory.mktemp("controller"))
    try:
        yield local
    finally:
        local.stop()


class TestDriverRollout:
    def test_up_without_the_wait_then_the_controller_labels_the_nodes(
        self, rollout_stack: ConfiguredStack, gpu_nodes: Client, controller: LocalController
    ) -> None:
        rollout_stack.configure(_driver_document(VERSIONS[0], wait=False))
        up = rollout_stack.stack.up()
        assert not [s for s in up.steps if s.type == DYNAMIC_TYPE], "a DriverRollout without waitForDriverRollout"
        controller.start()

        def labelled() -> bool:
            assert controller.running(), controller.tail()
            return all((n.metadata.labels or {}).get("nvidia.com/gpu.deploy.driver") == "true"
                       for name, n in _nodes(gpu_nodes).items() if name in GPU_NODES)

        wait_until(labelled, timeout=90, what="the controller to label the GPU nodes")
        wait_until(lambda: len([p for p in _pods(gpu_nodes, DRIVER_APP) if p.status.phase == "Running"])
                   == len(GPU_NODES), timeout=120, what="a driver pod Running on every GPU node")
        wait_until(lambda: _rolled_out(gpu_nodes), timeout=120, what="every GPU node to start upgrade-done")
        note(f"engine: rollout stack up {up.seconds:.1f} s ({len(up.steps)} resources, no wait); the controller "
             f"labelled {len(GPU_NODES)} nodes and their driver pods run")

    def test_a_driver_version_change_waits_until_every_node_is_upgraded(
        self, rollout_stack: ConfiguredStack, gpu_nodes: Client, controller: LocalController
    ) -> None:
        assert controller.running(), controller.tail()
        before = newest_revisions(gpu_nodes.list(ControllerRevision, namespace=NAMESPACE))[DRIVER_APP]
        _validator_off(gpu_nodes, HELD)  # its upgrade waits in validation-required until the release
        rollout_stack.configure(_driver_document(VERSIONS[1], wait=True))
        watcher, release = RolloutWatcher(gpu_nodes), validator_release(gpu_nodes, HELD, HOLD)
        watcher.start()
        release.start()
        try:
            up = rollout_stack.stack.up()
            returned = time.monotonic()
            states = _rollout_state(gpu_nodes)  # right after `up` returned
        except EngineError as error:
            pytest.fail(f"{error}\n{controller.tail()}", pytrace=False)
        finally:
            release.close()
            watcher.close()
            gpu_nodes.patch(Node, HELD, {"metadata": {"labels": {VALIDATOR_LABEL: "true"}}})
        assert release.error is None, release.error
        assert release.acted_at is not None, f"{HELD} never reached validation-required during up"
        assert returned >= release.acted_at, "up returned while a node was still validating its new driver"
        assert all(state == "upgrade-done" and newest for state, newest in states.values()), (
            f"`up` returned before the rollout finished: {states}")
        after = newest_revisions(gpu_nodes.list(ControllerRevision, namespace=NAMESPACE))[DRIVER_APP]
        assert after != before, "the driver DaemonSet's template did not change"
        [rollout] = [s for s in up.steps if s.type == DYNAMIC_TYPE]
        assert rollout.op == "create" and rollout.name.endswith("-driver-rollout"), rollout
        types = {step.urn: step.type for step in up.steps}
        resources = [urn for urn in up.finished if types.get(urn, "").startswith("kubernetes:") or urn == rollout.urn]
        assert resources and resources[-1] == rollout.urn, (
            f"the DriverRollout was not the last to finish: {resources[-3:]}")
        assert watcher.all_done_at is not None and watcher.all_done_at <= returned + 1.0, (
            watcher.all_done_at, returned)
        note(f"engine: driver {VERSIONS[0]} -> {VERSIONS[1]} with waitForDriverRollout: up {up.seconds:.1f} s, "
             f"{HELD} held in validation-required for {HOLD} s; up returned {returned - release.acted_at:.1f} s "
             f"after its release and {returned - watcher.all_done_at:.1f} s after the watcher saw every node "
             f"upgrade-done on the new template ({watcher.samples} samples); DriverRollout finished last")

    def test_a_failing_node_fails_the_up_with_its_reason(
        self, rollout_stack: ConfiguredStack, gpu_nodes: Client, controller: LocalController
    ) -> None:
        assert controller.running(), controller.tail()
        # for good: the controller fails the node VALIDATION_TIMEOUT after its validation started
        with _failing_validator(gpu_nodes, FAILING):
            rollout_stack.configure(_driver_document(VERSIONS[2], wait=True))
            with pytest.raises(EngineError) as raised:
                rollout_stack.stack.up()
        error = raised.value
        node = _nodes(gpu_nodes)[FAILING]
        assert (node.metadata.labels or {}).get(STATE_LABEL) == "upgrade-failed", (
            f"{controller.tail()}\n{error.output[-2000:]}")
        assert (node.metadata.labels or {}).get(VALIDATOR_LABEL) == "false", "the controller reset the label"
        reason = (node.metadata.annotations or {}).get(FAILURE_ANNOTATION, "")
        assert reason and "validator" in reason, reason
        assert "controller.waitForDriverRollout: the driver upgrade failed on 1 node(s)" in error.output, error.output
        assert f"{FAILING}: {reason}" in error.output, error.output
        assert "nvidia.com/gpu-driver-upgrade-state=upgrade-required" in error.output
        others = [name for name in GPU_NODES if name != FAILING]
        assert not any(f"{name}: " in error.output for name in others), error.output
        note(f"engine: driver {VERSIONS[1]} -> {VERSIONS[2]} with {FAILING}'s validator never Ready: up failed after "
             f"{error.operation.seconds:.1f} s naming {FAILING}: {reason}")
        assert controller.running(), controller.tail()


# --- MofedReadiness --------------------------------------------------------------------------------------------


def _mofed_document(**network: Any) -> Object:
    return merge_values(base_document(), {
        "nfd": {"enabled": False},  # the Network Operator's chart brings NFD
        "network": {"enabled": True, "vfDeviceIds": ["101e"], "waitForMofed": True, "mofedTimeoutSeconds": MOFED_TIMEOUT,
                    "chart": {"path": chart_file("network-operator-26.4.1.tgz")}, **copy.deepcopy(network)},
    })


def _ib_node(name: str) -> Object:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]},
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok",
                                    IB_NODE_LABEL: "true", MOFED_WAIT_LABEL: "true"}}}


def _set_wait(client: Client, name: str, value: str) -> None:
    client.patch(Node, name, {"metadata": {"labels": {MOFED_WAIT_LABEL: value}}})


@pytest.fixture(scope="class")
def ib_nodes(cluster: Client) -> Client:
    failures = server_side_apply(cluster, [_ib_node(name) for name in IB_NODES], KindTable(), dry_run=False)
    assert not failures, "\n".join(map(str, failures))
    return cluster


@pytest.fixture(scope="class")
def mofed_stack(engine: Engine, plane: ControlPlane, ib_nodes: Client) -> ConfiguredStack:
    project = engine.project("gpu-operator-mofed", REPO_ROOT / "stacks")
    return ConfiguredStack(engine.stack(project, "mofed"), plane.admin_kubeconfig.read_text())


def mofed_flipper(client: Client, delay: float) -> DelayedAction:
    """The Network Operator's part: once the NicClusterPolicy exists, after `delay` seconds, MOFED is ready on every
    IB node (`mofed.wait=false`)."""

    def flip() -> None:
        for name in IB_NODES:
            _set_wait(client, name, "false")

    return DelayedAction(lambda: bool(list(client.list(NicClusterPolicy))), flip, delay)


class TestMofedReadiness:
    def test_up_waits_until_every_ib_node_has_mofed(self, mofed_stack: ConfiguredStack, ib_nodes: Client) -> None:
        mofed_stack.configure(_mofed_document())
        flipper = mofed_flipper(ib_nodes, delay=8)
        started = time.monotonic()
        flipper.start()
        try:
            up = mofed_stack.stack.up()
            returned = time.monotonic()
        finally:
            flipper.close()
        assert flipper.error is None, flipper.error
        assert flipper.acted_at is not None, "the NicClusterPolicy never appeared, or up returned before the flip"
        assert returned >= flipper.acted_at, "up returned before MOFED was ready on every IB node"
        [mofed] = [s for s in up.steps if s.type == DYNAMIC_TYPE and s.name.endswith("-mofed-ready")]
        assert mofed.op == "create"
        waited = up.finished.index(mofed.urn)
        operator = [i for i, urn in enumerate(up.finished) if "GpuOperand$kubernetes:apps/v1:DaemonSet::" in urn]
        assert operator and min(operator) > waited, "the GPU operator's DaemonSets were created before the wait"
        note(f"engine: network with waitForMofed: up {up.seconds:.1f} s; NicClusterPolicy after "
             f"{flipper.seen_at - started:.1f} s, MOFED flipped ready {flipper.delay:.0f} s later, up returned "
             f"{returned - flipper.acted_at:.1f} s after the flip; the GPU operator after the wait")

    def test_a_policy_change_waits_again_and_fails_naming_the_waiting_node(
        self, mofed_stack: ConfiguredStack, ib_nodes: Client
    ) -> None:
        waiting = IB_NODES[0]
        _set_wait(ib_nodes, waiting, "true")  # the operator reloads MOFED there after the policy change
        mofed_stack.configure(_mofed_document(ofedDriver={"env": [{"name": "UNLOAD_STORAGE_MODULES", "value": "true"}]}))
        with pytest.raises(EngineError) as raised:
            mofed_stack.stack.up()
        error = raised.value
        [mofed] = [s for s in error.operation.steps if s.type == DYNAMIC_TYPE and s.name.endswith("-mofed-ready")]
        assert mofed.op == "update", mofed
        assert "network.waitForMofed: MOFED ready on 2 of 3 InfiniBand node(s)" in error.output, error.output
        assert f"waiting: {waiting} after {MOFED_TIMEOUT} s" in error.output, error.output
        assert error.operation.seconds >= MOFED_TIMEOUT
        note(f"engine: NicClusterPolicy change with {waiting} still loading MOFED: up failed after "
             f"{error.operation.seconds:.1f} s naming it")

