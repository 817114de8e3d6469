"""The driver manager's decisions, route by route, against a simulated node (tests/agents/driver_manager/world.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpu_operator.agents.driver_manager.actions import (
    Cordon,
    Evict,
    RemoveFile,
    SetLabels,
    UnbindVfio,
    Uncordon,
    UnloadModule,
    Unmount,
)
from gpu_operator.agents.driver_manager.labels import (
    CORDONED_ANNOTATION,
    DRA_DRIVER_LABEL,
    DRAIN_SKIP_LABEL,
    DRIVER_LABEL,
    PAUSED,
    UPGRADE_ENABLED_ANNOTATION,
)
from gpu_operator.agents.driver_manager.plan import POLICY_NOTE, Route, classify
from gpu_operator.agents.driver_manager.pods import PodFacts
from gpu_operator.agents.driver_manager.settings import DrainOptions, Settings
from gpu_operator.agents.driver_manager.snapshot import HostFacts, NodeFacts, Snapshot
from gpu_operator.facts.label_selector import parse_selector
from tests.agents.driver_manager.world import REFUSED, World, drive, gpu_pod, operand_pod

DIGEST = "d" * 64
PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
GFD = "nvidia.com/gpu.deploy.gpu-feature-discovery"
EXPORTER = "nvidia.com/gpu.deploy.dcgm-exporter"
MIG = "nvidia.com/gpu.deploy.mig-manager"
DEPLOY = {DRIVER_LABEL: "true", PLUGIN: "true", GFD: "true", EXPORTER: "false", MIG: "paused-for-mig-change"}
LOADED = {"nvidia", "nvidia_uvm", "nvidia_modeset"}
SETTINGS = Settings(node_name="gpu-0", desired_digest=DIGEST, enable_auto_drain=False, poll_interval=1.0)


def world(**facts: object) -> World:
    base: dict[str, object] = {"labels": dict(DEPLOY), "modules": set(LOADED), "loaded_digest": "0" * 64}
    found = World(**{**base, **facts})  # type: ignore[arg-type]
    return found.add(operand_pod(PLUGIN), operand_pod(GFD))


def paused_while(run_actions: list[object]) -> list[dict[str, str]]:
    return [dict(action.labels) for action in run_actions if isinstance(action, SetLabels)]


# --- the route ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("host", "settings", "route"), [
    (HostFacts(host_driver="580.95.05", modules=frozenset({"nvidia"})), SETTINGS, Route.HOST_DRIVER),
    (HostFacts(), SETTINGS, Route.FRESH),
    (HostFacts(modules=frozenset({"nouveau"})), SETTINGS, Route.FRESH),
    (HostFacts(modules=frozenset({"nvidia"}), loaded_digest=DIGEST), SETTINGS, Route.KEEP),
    (HostFacts(modules=frozenset({"nvidia"}), loaded_digest=DIGEST), replace(SETTINGS, force_reinstall=True),
     Route.UPGRADE),
    (HostFacts(modules=frozenset({"nvidia"}), loaded_digest=DIGEST), replace(SETTINGS, desired_digest=""),
     Route.UPGRADE),
    (HostFacts(modules=frozenset({"nvidia"}), loaded_digest=""), SETTINGS, Route.UPGRADE),
    (HostFacts(modules=frozenset({"nvidia"}), loaded_digest="e" * 64), SETTINGS, Route.UPGRADE),
])
def test_the_first_snapshot_picks_the_route(host: HostFacts, settings: Settings, route: Route) -> None:
    assert classify(settings, Snapshot(NodeFacts(), (), host, 0.0))[0] is route


# --- host driver -------------------------------------------------------------------------------------------


def test_a_host_driver_labels_the_node_pre_installed_waits_and_fails() -> None:
    node = world(host_driver="580.95.05")
    run = drive(replace(SETTINGS, host_driver_delay=60.0), node)
    assert run.exit.code == 1 and "pre-installed" in run.exit.message
    assert run.actions == [SetLabels(((DRIVER_LABEL, "pre-installed"),), run.actions[0].why)]
    assert node.now >= 60.0
    assert {k: node.labels[k] for k in DEPLOY if k != DRIVER_LABEL} == {k: v for k, v in DEPLOY.items()
                                                                        if k != DRIVER_LABEL}


# --- no driver loaded --------------------------------------------------------------------------------------


def test_fresh_install_touches_no_label_and_evicts_nothing() -> None:
    node = world(modules=set()).add(gpu_pod("train"))
    run = drive(SETTINGS, node)
    assert (run.exit.code, run.actions) == (0, [])
    assert node.labels == DEPLOY and not node.unschedulable


def test_fresh_boot_cleans_what_an_old_driver_container_left() -> None:
    node = world(modules={"nouveau", "mlx5_core"}, mounts=["/run/nvidia/driver/dev", "/run/nvidia/driver"],
                 pid_file=True, vfio=["0000:3b:00.0"])
    run = drive(SETTINGS, node)
    assert run.exit.code == 0
    assert run.actions == [
        Unmount("/run/nvidia/driver/dev"), Unmount("/run/nvidia/driver"), RemoveFile("/run/nvidia/nvidia-driver.pid"),
        UnloadModule("nouveau"), UnbindVfio(("0000:3b:00.0",)),
    ]


def test_with_rdma_it_waits_for_mofed_before_letting_the_driver_install() -> None:
    node = world(modules=set(), mellanox=True, mofed_ready_after=30.0)
    run = drive(replace(SETTINGS, gpu_direct_rdma=True), node)
    assert run.exit.code == 0 and node.now >= 30.0
    assert any("MOFED" in reason for reason in run.waits())
    no_mellanox = drive(replace(SETTINGS, gpu_direct_rdma=True), world(modules=set()))
    assert no_mellanox.waits() == []


def test_a_restarted_manager_restores_what_an_interrupted_one_paused_and_cordoned() -> None:
    labels = {**DEPLOY, PLUGIN: PAUSED, GFD: PAUSED, MIG: f"paused-for-mig-change_{PAUSED}"}
    node = world(modules=set(), labels=labels, unschedulable=True, annotations={CORDONED_ANNOTATION: "true"})
    run = drive(SETTINGS, node)
    assert run.exit.code == 0
    assert node.labels == DEPLOY and not node.unschedulable and CORDONED_ANNOTATION not in node.annotations
    assert run.kinds() == ["Uncordon", "SetLabels"]


# --- the loaded driver matches ------------------------------------------------------------------------------


def test_digest_match_pauses_and_restores_without_cordon_or_eviction() -> None:
    node = world(loaded_digest=DIGEST, mounts=["/run/nvidia/driver"]).add(gpu_pod("train"))
    run = drive(SETTINGS, node)
    assert run.exit.code == 0 and "kept" in run.exit.message
    assert run.kinds() == ["SetLabels", "Unmount", "SetLabels"]
    assert paused_while(run.actions) == [
        {PLUGIN: PAUSED, GFD: PAUSED, MIG: f"paused-for-mig-change_{PAUSED}"},
        {PLUGIN: "true", GFD: "true", MIG: "paused-for-mig-change"},
    ]
    assert node.labels == DEPLOY and "default/train" in node.pods and node.modules == LOADED


# --- upgrade ------------------------------------------------------------------------------------------------


def test_upgrade_pauses_cordons_evicts_unloads_then_uncordons_and_restores() -> None:
    node = world(mounts=["/run/nvidia/driver"], pid_file=True, modules=LOADED | {"nouveau"})
    node.add(gpu_pod("train-0"), gpu_pod("train-1", "ml"), PodFacts("default", "web", controller="ReplicaSet"))
    run = drive(SETTINGS, node)
    assert run.exit.code == 0, run.exit
    assert run.actions == [
        run.actions[0],
        Cordon(),
        Evict("default", "train-0", "GPU"),
        Evict("ml", "train-1", "GPU"),
        UnloadModule("nvidia_modeset"), UnloadModule("nvidia_uvm"), UnloadModule("nvidia"),
        Unmount("/run/nvidia/driver"), RemoveFile("/run/nvidia/nvidia-driver.pid"),
        Uncordon(),
        run.actions[10],
        UnloadModule("nouveau"),
    ]
    assert paused_while(run.actions)[0] == {PLUGIN: PAUSED, GFD: PAUSED, MIG: f"paused-for-mig-change_{PAUSED}"}
    assert node.labels == DEPLOY and not node.unschedulable and not node.annotations
    assert set(node.pods) == {"default/web", "gpu-operator/device-plugin-pod", "gpu-operator/gpu-feature-discovery-pod"}
    # it waited for the operands to stop before evicting anything
    assert any("operand pods" in reason for reason in run.waits())


def test_the_dra_kubelet_plugin_is_paused_after_the_gpu_pods_are_gone() -> None:
    node = world(labels={**DEPLOY, DRA_DRIVER_LABEL: "true"}).add(gpu_pod("train"), operand_pod(DRA_DRIVER_LABEL))
    run = drive(SETTINGS, node)
    assert run.exit.code == 0
    kinds = run.kinds()
    assert kinds.index("Evict") < [i for i, a in enumerate(run.actions)
                                   if isinstance(a, SetLabels) and DRA_DRIVER_LABEL in dict(a.labels)][0]
    assert node.labels[DRA_DRIVER_LABEL] == "true"


def test_a_node_already_cordoned_is_neither_cordoned_nor_uncordoned() -> None:
    node = world(unschedulable=True).add(gpu_pod("train"))
    run = drive(SETTINGS, node)
    assert run.exit.code == 0
    assert "Cordon" not in run.kinds() and "Uncordon" not in run.kinds()
    assert node.unschedulable


def test_upgrade_policy_disables_eviction_and_drain() -> None:
    node = world(annotations={UPGRADE_ENABLED_ANNOTATION: "true"})
    run = drive(replace(SETTINGS, enable_auto_drain=True), node)
    assert run.exit.code == 0 and POLICY_NOTE in run.notes
    assert "Cordon" not in run.kinds() and "Evict" not in run.kinds()
    held = world(annotations={UPGRADE_ENABLED_ANNOTATION: "true"}).add(gpu_pod("train"))
    failed = drive(replace(SETTINGS, enable_auto_drain=True), held)
    assert failed.exit.code == 1 and "disabled by the upgrade policy" in failed.exit.message
    assert held.labels == DEPLOY and "Evict" not in failed.kinds()


def test_eviction_disabled_leaves_gpu_pods_and_fails_when_they_hold_the_driver() -> None:
    node = world().add(gpu_pod("train"))
    run = drive(replace(SETTINGS, enable_gpu_pod_eviction=False), node)
    assert run.exit.code == 1 and "in use" in run.exit.message and "ENABLE_AUTO_DRAIN is off" in run.exit.message
    assert "Evict" not in run.kinds() and "Cordon" not in run.kinds()
    assert node.labels == DEPLOY and "default/train" in node.pods


@pytest.mark.parametrize(("pod", "reason"), [
    (gpu_pod("ds-gpu", controller="DaemonSet"), "is a DaemonSet pod"),
    (gpu_pod("scratch", empty_dir=True), "DRAIN_DELETE_EMPTYDIR_DATA"),
    (gpu_pod("bare", controller=""), "DRAIN_USE_FORCE"),
    (gpu_pod("static", mirror=True), "static pod"),
])
def test_a_gpu_pod_that_may_not_be_evicted_fails_before_any_eviction_and_restores(pod: PodFacts, reason: str) -> None:
    node = world().add(gpu_pod("train"), pod)
    run = drive(SETTINGS, node)
    assert run.exit.code == 1 and reason in run.exit.message
    assert "Evict" not in run.kinds()
    assert node.labels == DEPLOY and not node.unschedulable and not node.annotations
    assert run.kinds()[-2:] == ["Uncordon", "SetLabels"]


def test_drain_options_let_those_pods_go() -> None:
    node = world().add(gpu_pod("scratch", empty_dir=True), gpu_pod("bare", controller=""))
    drain = DrainOptions(force=True, delete_emptydir_data=True)
    run = drive(replace(SETTINGS, drain=drain), node)
    assert run.exit.code == 0 and run.kinds().count("Evict") == 2


def test_failed_eviction_with_auto_drain_drains_the_node_except_skipped_and_daemonset_pods() -> None:
    node = world().add(
        gpu_pod("ds-gpu", controller="DaemonSet"),
        PodFacts("default", "web", controller="ReplicaSet"),
        PodFacts("default", "batch", labels={"tier": "batch"}, controller="Job"),
        PodFacts("default", "frontend", labels={"tier": "web"}, controller="ReplicaSet"),
        PodFacts("gpu-operator", "operator", labels={DRAIN_SKIP_LABEL: "true"}, controller="ReplicaSet"),
    )
    settings = replace(SETTINGS, enable_auto_drain=True, drain=DrainOptions(pod_selector=parse_selector("tier!=web")))
    run = drive(settings, node)
    evicted = {(a.namespace, a.name) for a in run.actions if isinstance(a, Evict)}
    assert evicted == {("default", "web"), ("default", "batch")}
    # the DaemonSet GPU pod still holds the driver: the unload fails, a second drain finds nothing, it gives up
    assert run.exit.code == 1 and "in use" in run.exit.message
    assert node.labels == DEPLOY and not node.unschedulable


def test_unload_failure_with_auto_drain_drains_and_unloads_again() -> None:
    node = world().add(PodFacts("default", "cuda-host-proc", controller="ReplicaSet"))
    node.holders = {"default/cuda-host-proc"}
    run = drive(replace(SETTINGS, enable_auto_drain=True), node)
    assert run.exit.code == 0, run.exit
    kinds = run.kinds()
    first_unload = kinds.index("UnloadModule")
    assert kinds[first_unload + 1: first_unload + 2] == ["Evict"]
    assert not node.modules & {"nvidia", "nvidia_uvm"}


def test_unload_failure_without_auto_drain_restores_and_fails() -> None:
    node = world(unload_fails={"nvidia"})
    run = drive(SETTINGS, node)
    assert run.exit.code == 1 and "rmmod nvidia" in run.exit.message
    assert node.labels == DEPLOY and not node.unschedulable


def test_a_disruption_budget_is_retried_until_the_drain_timeout_then_everything_is_restored() -> None:
    node = world(pdb_blocked={"default/train": float("inf")}).add(gpu_pod("train"))
    run = drive(replace(SETTINGS, drain=DrainOptions(timeout=20.0)), node)
    assert run.exit.code == 1
    assert "DRAIN_TIMEOUT_SECONDS" in run.exit.message and REFUSED in run.exit.message
    evictions = [a for a in run.actions if isinstance(a, Evict)]
    assert 10 <= len(evictions) <= 25  # one try per poll interval, not a busy loop
    assert node.labels == DEPLOY and not node.unschedulable and "default/train" in node.pods


def test_a_budget_that_opens_in_time_lets_the_upgrade_finish() -> None:
    node = world(pdb_blocked={"default/train": 5.0}).add(gpu_pod("train"))
    run = drive(replace(SETTINGS, drain=DrainOptions(timeout=60.0)), node)
    assert run.exit.code == 0 and "default/train" not in node.pods


def test_operand_pods_that_do_not_stop_fail_the_run_after_the_operand_timeout() -> None:
    node = world().add(operand_pod(PLUGIN, stuck=True))
    run = drive(replace(SETTINGS, operand_timeout=30.0), node)
    assert run.exit.code == 1 and "device-plugin-stuck" in run.exit.message
    assert node.labels == DEPLOY and "Evict" not in run.kinds()


def test_operand_pods_outside_the_operator_namespace_are_not_waited_for_unless_gpu_clients() -> None:
    client = "nvidia.com/gpu.deploy.client"
    node = world(labels={**DEPLOY, client: "true"}).add(
        operand_pod(PLUGIN, "other-plugin", "elsewhere", stuck=True), operand_pod(client, "vendor-client", "vendor"))
    run = drive(SETTINGS, node)
    assert run.exit.code == 0 and node.labels[client] == "true"
    assert any("vendor/vendor-client" in reason for reason in run.waits())
    assert not any("other-plugin" in reason for reason in run.waits())


def test_the_custom_eviction_label_is_paused_and_restored() -> None:
    custom = "example.com/gpu-agent"
    node = world(labels={**DEPLOY, custom: "on"})
    run = drive(replace(SETTINGS, eviction_label=custom), node)
    assert paused_while(run.actions)[0][custom] == f"on_{PAUSED}"
    assert run.exit.code == 0 and node.labels[custom] == "on"


def test_a_stop_signal_while_waiting_restores_and_uncordons() -> None:
    node = world(pdb_blocked={"default/train": float("inf")}).add(gpu_pod("train"))
    run = drive(SETTINGS, node, stop_when=lambda w: w.now > 10)
    assert run.exit.code == 1 and "signal 15" in run.exit.message
    assert node.labels == DEPLOY and not node.unschedulable
