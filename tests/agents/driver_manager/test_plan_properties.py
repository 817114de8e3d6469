"""Properties of the driver manager's decisions over generated nodes, settings and failures (hypothesis).

Whatever the node looks like and whatever fails, every run ends; the operand labels end as they were before any
pause (a stale pause from an interrupted run is undone too); a node is uncordoned only if this program cordoned
it and left schedulable only if it was; no action is asked for when what it does already holds; and a success
means what it claims (the old driver gone, or the loaded one kept; no GPU pod left when eviction ran).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_operator.agents.driver_manager.actions import (
    Action,
    Cordon,
    Evict,
    Exit,
    RemoveFile,
    SetLabels,
    UnbindVfio,
    Uncordon,
    UnloadModule,
    Unmount,
    Wait,
)
from gpu_operator.agents.driver_manager.labels import (
    CORDONED_ANNOTATION,
    DRA_DRIVER_LABEL,
    DRIVER_LABEL,
    OPERAND_LABELS,
    UPGRADE_ENABLED_ANNOTATION,
    unpause,
)
from gpu_operator.agents.driver_manager.plan import DRIVER_MODULES, Route
from gpu_operator.agents.driver_manager.pods import PodFacts
from gpu_operator.agents.driver_manager.settings import DrainOptions, Settings
from gpu_operator.agents.driver_manager.snapshot import Snapshot
from tests.agents.driver_manager.world import World, drive, operand_pod

DIGEST = "a" * 64
KEYS = (*OPERAND_LABELS[:6], "nvidia.com/gpu.deploy.client", DRA_DRIVER_LABEL)
VALUES = st.sampled_from(["true", "false", "", "on", "paused-for-mig-change", "paused-for-driver-upgrade",
                          "on_paused-for-driver-upgrade"])


@st.composite
def pods(draw: st.DrawFn) -> PodFacts:
    return PodFacts(
        draw(st.sampled_from(["default", "ml", "gpu-operator"])),
        f"pod-{draw(st.integers(0, 50))}",
        labels=draw(st.sampled_from([{}, {"nvidia.com/gpu-driver-upgrade-drain.skip": "true"}, {"tier": "web"}])),
        controller=draw(st.sampled_from(["ReplicaSet", "Job", "", "DaemonSet"])),
        gpu=draw(st.booleans()),
        phase=draw(st.sampled_from(["Running", "Running", "Pending", "Succeeded"])),
        empty_dir=draw(st.booleans()),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Settings, World, bool]:
    timeout = draw(st.sampled_from([0.0, 15.0, 120.0]))
    config = Settings(
        node_name="gpu-0",
        enable_gpu_pod_eviction=draw(st.booleans()),
        enable_auto_drain=draw(st.booleans()),
        drain=DrainOptions(force=draw(st.booleans()), delete_emptydir_data=draw(st.booleans()), timeout=timeout),
        desired_digest=draw(st.sampled_from([DIGEST, ""])),
        gpu_direct_rdma=draw(st.booleans()),
        force_reinstall=draw(st.booleans()),
        host_driver_delay=5.0,
        operand_timeout=60.0,
        poll_interval=draw(st.sampled_from([1.0, 5.0])),
    )
    labels = {key: draw(VALUES) for key in KEYS if draw(st.booleans())}
    labels[DRIVER_LABEL] = "true"
    annotations = {}
    if draw(st.booleans()):
        annotations[UPGRADE_ENABLED_ANNOTATION] = draw(st.sampled_from(["true", "false"]))
    unschedulable = draw(st.booleans())
    cordoned_by_us = unschedulable and draw(st.booleans())
    if cordoned_by_us:
        annotations[CORDONED_ANNOTATION] = "true"
    loaded = draw(st.booleans())
    world = World(
        labels=labels,
        annotations=annotations,
        unschedulable=unschedulable,
        modules=({"nvidia", "nvidia_uvm"} if loaded else set()) | ({"nouveau"} if draw(st.booleans()) else set()),
        loaded_digest=draw(st.sampled_from([DIGEST, "b" * 64, ""])),
        host_driver="580.95.05" if draw(st.integers(0, 9)) == 0 else "",
        mounts=draw(st.sampled_from([[], ["/run/nvidia/driver"], ["/run/nvidia/driver/dev", "/run/nvidia/driver"]])),
        pid_file=draw(st.booleans()),
        vfio=draw(st.sampled_from([[], ["0000:3b:00.0"]])),
        mellanox=draw(st.booleans()),
        mofed_ready_after=draw(st.sampled_from([1.0, 20.0])),
        unload_fails={"nvidia"} if draw(st.integers(0, 5)) == 0 else set(),
    )
    for pod in draw(st.lists(pods(), max_size=5, unique_by=lambda p: (p.namespace, p.name))):
        world.add(pod)
        blocked = draw(st.sampled_from([None, 3.0, float("inf")]))
        if blocked is not None and (timeout or blocked != float("inf")):  # no limit + a budget that never opens
            world.pdb_blocked[pod.key] = blocked                          # waits for ever, as NVIDIA's does
    for key in labels:
        if key != DRIVER_LABEL and labels[key] == "true" and draw(st.booleans()):
            world.add(operand_pod(key, stuck=draw(st.integers(0, 7)) == 0))
    return config, world, cordoned_by_us


def _already_holds(action: Action, snapshot: Snapshot) -> bool:
    labels, host = snapshot.node.labels, snapshot.host
    pods = {pod.key: pod for pod in snapshot.pods}
    match action:
        case SetLabels(labels=changes):
            return any(labels.get(key) == value for key, value in changes) or not changes
        case Cordon():
            return snapshot.node.unschedulable
        case Uncordon():
            return CORDONED_ANNOTATION not in snapshot.node.annotations
        case Evict(namespace=namespace, name=name):
            pod = pods.get(f"{namespace}/{name}")
            return pod is None or pod.terminating
        case UnloadModule(module=module):
            return module not in host.modules
        case Unmount(path=path):
            return path not in host.driver_mounts
        case RemoveFile():
            return not host.pid_file
        case UnbindVfio(addresses=addresses):
            return not addresses or not set(addresses) <= set(host.vfio_bound)
    raise AssertionError(action)


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_every_run_ends_with_the_node_restored_and_no_needless_action(scenario: tuple[Settings, World, bool]) -> None:
    config, world, cordoned_by_us = scenario
    before_labels = dict(world.labels)
    before_unschedulable = world.unschedulable
    run = drive(config, world)

    # no action was asked for while what it does already held
    for snapshot, decision in run.trace:
        if not isinstance(decision, (Wait, Exit)):
            assert not _already_holds(decision, snapshot), (decision, snapshot)

    # the labels end as before any pause: restored on every path, absent ones never created
    expected = {key: unpause(value) for key, value in before_labels.items()}
    if world.host_driver:
        expected[DRIVER_LABEL] = "pre-installed"
    assert world.labels == expected, run.exit

    # uncordoned only what it cordoned; a node cordoned by someone else stays cordoned
    if before_unschedulable and not cordoned_by_us:
        assert "Uncordon" not in run.kinds()
        assert world.unschedulable
    else:
        assert not world.unschedulable
    assert CORDONED_ANNOTATION not in world.annotations

    # a success means what it says
    if world.host_driver:
        assert run.exit.code == 1
    if run.exit.code == 0:
        assert run.progress.route in (Route.FRESH, Route.KEEP, Route.UPGRADE)
        if run.progress.route is Route.UPGRADE:
            assert not world.modules & set(DRIVER_MODULES)
            policy = world.annotations.get(UPGRADE_ENABLED_ANNOTATION) == "true"
            if config.enable_gpu_pod_eviction and not policy:
                assert not [p for p in world.pods.values() if p.gpu and not p.finished]
        if run.progress.route is Route.KEEP:
            assert "Evict" not in run.kinds() and "UnloadModule" not in run.kinds()
        if config.gpu_direct_rdma and world.mellanox and run.progress.route is not Route.KEEP:
            assert world.now >= world.mofed_ready_after  # the driver installs only once MOFED is there
    else:
        assert run.exit.code == 1 and run.exit.message
