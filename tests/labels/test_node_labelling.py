"""Node labelling (reference/gpu-operator.md §6): every workload config, pause value and switch, as a table.

Upstream: NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go (gpuStateLabels, getEffectiveStateLabels,
addGPUStateLabels, removeGPUStateLabels, removeAllGPUStateLabels, hasMIGCapableGPU) and
controllers/nodelabeling_controller.go (updateGPUStateLabels, reconcileCommonGPULabel).
"""

from __future__ import annotations

import pytest

from gpu_operator.labels import (
    LabellingPolicy,
    WORKLOAD_OPERANDS,
    apply_changes,
    desired_operands,
    label_changes,
)

POLICY = LabellingPolicy(mig_manager_enabled=True, mig_default_config="all-disabled")
SANDBOX = LabellingPolicy(sandbox_enabled=True, default_workload="container", mig_manager_enabled=True,
                          mig_default_config="all-disabled")
KATA = LabellingPolicy(sandbox_enabled=True, sandbox_mode="kata")
NFD = {"feature.node.kubernetes.io/pci-10de.present": "true"}
D = "nvidia.com/gpu.deploy."
CONTAINER = {f"{D}{op}": "true" for op in (*WORKLOAD_OPERANDS["container"], "client")}


def _after(labels: dict[str, str], policy: LabellingPolicy = POLICY) -> dict[str, str]:
    return apply_changes(labels, label_changes(labels, policy))


@pytest.mark.parametrize(("labels", "policy", "operands"), [
    (NFD, POLICY, (*WORKLOAD_OPERANDS["container"], "client")),
    ({"feature.node.kubernetes.io/pci-0302_10de.present": "true"}, POLICY, (*WORKLOAD_OPERANDS["container"], "client")),
    ({"feature.node.kubernetes.io/pci-0300_10de.present": "true"}, POLICY, (*WORKLOAD_OPERANDS["container"], "client")),
    ({**NFD, "nvidia.com/mig.capable": "true"}, POLICY, (*WORKLOAD_OPERANDS["container"], "mig-manager", "client")),
    ({**NFD, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, POLICY,
     (*WORKLOAD_OPERANDS["container"], "mig-manager", "client")),  # no GFD label yet: the product name says
    ({**NFD, "nvidia.com/gpu.product": "NVIDIA-A100", "nvidia.com/vgpu.host-driver-version": "550"}, POLICY,
     (*WORKLOAD_OPERANDS["container"], "client")),  # never on a vGPU host
    ({**NFD, "nvidia.com/gpu.workload.config": "vm-passthrough"}, POLICY,
     (*WORKLOAD_OPERANDS["container"], "client")),  # sandbox off: every node is container
    ({**NFD, "nvidia.com/gpu.workload.config": "vm-passthrough"}, SANDBOX,
     ("sandbox-device-plugin", *WORKLOAD_OPERANDS["vm-passthrough"], "client")),
    ({**NFD, "nvidia.com/gpu.workload.config": "vm-passthrough"}, KATA,
     ("kata-sandbox-device-plugin", *WORKLOAD_OPERANDS["vm-passthrough"], "client")),
    ({**NFD, "nvidia.com/gpu.workload.config": "vm-vgpu"}, SANDBOX, (*WORKLOAD_OPERANDS["vm-vgpu"], "client")),
    ({**NFD, "nvidia.com/gpu.workload.config": "bogus"}, SANDBOX, (*WORKLOAD_OPERANDS["container"], "client")),
    ({**NFD}, LabellingPolicy(sandbox_enabled=True, default_workload="vm-vgpu"),
     (*WORKLOAD_OPERANDS["vm-vgpu"], "client")),
    ({**NFD, f"{D}operands": "false"}, POLICY, ()),
    ({"feature.node.kubernetes.io/pci-10de.present": "false"}, POLICY, ()),
    ({}, POLICY, ()),
])
def test_desired_operands(labels: dict[str, str], policy: LabellingPolicy, operands: tuple[str, ...]) -> None:
    assert desired_operands(labels, policy) == operands


@pytest.mark.parametrize("pause", [
    "paused-for-mig-change", "paused-for-driver-upgrade", "true_paused-for-driver-upgrade", "pre-installed", "false",
])
def test_a_non_empty_value_is_kept(pause: str) -> None:
    labels = {**NFD, "nvidia.com/gpu.present": "true", **CONTAINER, f"{D}device-plugin": pause}
    assert f"{D}device-plugin" not in label_changes(labels, POLICY)
    assert _after(labels)[f"{D}device-plugin"] == pause


def test_an_empty_value_counts_as_absent() -> None:
    labels = {**NFD, "nvidia.com/gpu.present": "true", **CONTAINER, f"{D}dcgm": ""}
    assert label_changes(labels, POLICY) == {f"{D}dcgm": "true"}


def test_a_new_gpu_node_gets_presence_deploy_labels_and_a_mig_layout() -> None:
    labels = {**NFD, "nvidia.com/mig.capable": "true"}
    after = _after(labels)
    assert after["nvidia.com/gpu.present"] == "true"
    assert after[f"{D}mig-manager"] == "true" and after[f"{D}client"] == "true"
    assert after["nvidia.com/mig.config"] == "all-disabled"
    assert label_changes(after, POLICY) == {}  # idempotent: a second pass writes nothing


def test_an_existing_mig_layout_is_never_overwritten() -> None:
    labels = {**NFD, "nvidia.com/mig.capable": "true", "nvidia.com/mig.config": "all-1g.10gb"}
    assert _after(labels)["nvidia.com/mig.config"] == "all-1g.10gb"


def test_no_mig_seed_without_the_mig_manager() -> None:
    policy = LabellingPolicy(mig_manager_enabled=False, mig_default_config="all-disabled")
    assert "nvidia.com/mig.config" not in _after({**NFD, "nvidia.com/mig.capable": "true"}, policy)


def test_operands_false_removes_every_deploy_label_but_the_switch() -> None:
    labels = {**NFD, "nvidia.com/gpu.present": "true", **CONTAINER, f"{D}operands": "false"}
    changes = label_changes(labels, POLICY)
    assert changes == {key: None for key in CONTAINER}
    assert _after(labels) == {**NFD, "nvidia.com/gpu.present": "true", f"{D}operands": "false"}


def test_a_node_whose_gpu_went_away_reads_false_and_loses_its_deploy_labels() -> None:
    labels = {"nvidia.com/gpu.present": "true", **CONTAINER, "team": "ml"}
    after = _after(labels)
    assert after == {"nvidia.com/gpu.present": "false", "team": "ml"}


def test_labels_outside_the_workload_are_removed_when_the_workload_changes() -> None:
    labels = {**NFD, "nvidia.com/gpu.present": "true", **CONTAINER, "nvidia.com/gpu.workload.config": "vm-vgpu"}
    after = _after(labels, SANDBOX)
    deploy = {key for key in after if key.startswith(D)}
    assert deploy == {f"{D}{op}" for op in (*WORKLOAD_OPERANDS["vm-vgpu"], "client")}


def test_a_cpu_node_is_left_alone() -> None:
    assert label_changes({"kubernetes.io/os": "linux"}, POLICY) == {}


def test_the_whole_container_set_whatever_the_config_enables() -> None:
    """state_manager.go gpuStateLabels / addGPUStateLabels: the effective set of the workload config is written
    as it is, never narrowed to the operands the ClusterPolicy enables (DCGM is off by default, yet
    `gpu.deploy.dcgm=true` is set), and a MIG-capable container node gets `mig-manager` besides."""
    after = _after({**NFD, "nvidia.com/mig.capable": "true"}, LabellingPolicy())
    deploy = {key.removeprefix(D): value for key, value in after.items() if key.startswith(D)}
    assert deploy == {op: "true" for op in (*WORKLOAD_OPERANDS["container"], "mig-manager", "client")}
    assert deploy["dcgm"] == "true" and deploy["node-status-exporter"] == "true"


@pytest.mark.parametrize("foreign", ["nvidia.com/gpu.deploy.my-gpu-agent", "nvidia.com/gpu.deploy.nvsm"])
@pytest.mark.parametrize("labels", [
    {**NFD, "nvidia.com/gpu.present": "true", **CONTAINER},                       # a labelled GPU node
    {**NFD, "nvidia.com/gpu.present": "true", **CONTAINER, f"{D}operands": "false"},  # operands switched off
    {"nvidia.com/gpu.present": "true", **CONTAINER},                              # its GPU went away
])
def test_deploy_labels_we_do_not_own_are_left_alone(labels: dict[str, str], foreign: str) -> None:
    """state_manager.go removeGPUStateLabels / removeAllGPUStateLabels delete only the keys of
    clusterPolicyStateLabelKeys (every gpuStateLabels key, both sandbox device plugins, mig-manager) and
    gpuClusterStateLabels; any other `nvidia.com/gpu.deploy.*` label is someone else's."""
    labels = {**labels, foreign: "true"}
    assert foreign not in label_changes(labels, POLICY)
    assert _after(labels)[foreign] == "true"


def test_the_dra_stacks_deploy_labels_are_swept_from_a_cluster_policy_node() -> None:
    """state_manager.go removeGPUStateLabels: gpuClusterStateLabels (dra-driver, dra-validator, dcgm-dra,
    dcgm-exporter-dra) are in the swept keys, so the DRA stack's leftovers go."""
    labels = {**NFD, "nvidia.com/gpu.present": "true", **CONTAINER,
              **{f"{D}{op}": "true" for op in ("dra-driver", "dra-validator", "dcgm-dra", "dcgm-exporter-dra")}}
    assert _after(labels) == {**NFD, "nvidia.com/gpu.present": "true", **CONTAINER}


def test_kata_mode_swaps_the_passthrough_device_plugin_and_vm_passthrough_runs_the_kata_manager() -> None:
    """state_manager.go getEffectiveStateLabels: with `sandboxWorkloads.mode: kata` a vm-passthrough node gets
    `kata-sandbox-device-plugin` instead of `sandbox-device-plugin` (and the other way round with kubevirt);
    gpuStateLabels[vm-passthrough] holds `kata-manager`."""
    labels = {**NFD, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.workload.config": "vm-passthrough",
              f"{D}sandbox-device-plugin": "true"}
    changes = label_changes(labels, KATA)
    assert changes[f"{D}sandbox-device-plugin"] is None and changes[f"{D}kata-sandbox-device-plugin"] == "true"
    assert changes[f"{D}kata-manager"] == "true"
    kubevirt = LabellingPolicy(sandbox_enabled=True)
    after = _after({**labels, f"{D}kata-sandbox-device-plugin": "true"}, kubevirt)
    assert f"{D}kata-sandbox-device-plugin" not in after and after[f"{D}sandbox-device-plugin"] == "true"


def test_mig_manager_stays_on_a_container_node_and_goes_with_another_workload() -> None:
    """state_manager.go removeGPUStateLabels skips mig-manager on the container config (addGPUStateLabels owns
    it), so a node whose GPU no longer reads as MIG-capable keeps it; on vm-vgpu it is not in the effective set
    and goes. addGPUStateLabels adds it only when hasMIGManagerLabel finds no key, so an empty value stays."""
    labels = {**NFD, "nvidia.com/gpu.present": "true", **CONTAINER, f"{D}mig-manager": "true",
              "nvidia.com/mig.capable": "false"}
    assert f"{D}mig-manager" not in label_changes(labels, SANDBOX)
    assert label_changes({**labels, "nvidia.com/gpu.workload.config": "vm-vgpu"}, SANDBOX)[f"{D}mig-manager"] is None
    empty = {**labels, "nvidia.com/mig.capable": "true", f"{D}mig-manager": "", "nvidia.com/mig.config": "x"}
    assert label_changes(empty, POLICY) == {}


# --- issue 27, item 11 (controllers/nodelabeling_controller.go updateGPUStateLabels)

@pytest.mark.parametrize("labels", [
    {**NFD, "nvidia.com/mig.capable": "true", "nvidia.com/gpu.workload.config": "vm-passthrough"},
    {**NFD, "nvidia.com/mig.capable": "true", "nvidia.com/gpu.workload.config": "vm-vgpu"},
    {**NFD, "nvidia.com/mig.capable": "true", f"{D}operands": "false"},
    {**NFD, "nvidia.com/gpu.product": "NVIDIA-A30", "nvidia.com/mig.config": ""},
])
def test_every_mig_capable_gpu_node_gets_the_all_disabled_seed(labels: dict[str, str]) -> None:
    """Item 11. updateGPUStateLabels seeds `nvidia.com/mig.config=all-disabled` when the MIG manager is enabled
    with that default, hasMIGCapableGPU and !hasMIGConfigLabel (missing or empty): after the workload's labels,
    whatever the workload config or the operands switch."""
    assert _after(labels, SANDBOX)["nvidia.com/mig.config"] == "all-disabled"


@pytest.mark.parametrize("labels", [
    {**NFD, "nvidia.com/mig.capable": "false"},
    {**NFD, "nvidia.com/gpu.product": "NVIDIA-A100", "nvidia.com/vgpu.host-driver-version": "550"},
    {"nvidia.com/mig.capable": "true", "nvidia.com/gpu.present": "true"},  # its GPUs are gone
])
def test_no_mig_seed_where_nvidia_writes_none(labels: dict[str, str]) -> None:
    """Item 11. hasMIGCapableGPU is false, or hasCommonGPULabel is (removeAllGPUStateLabels runs instead)."""
    assert "nvidia.com/mig.config" not in label_changes(labels, SANDBOX)


DRA = f"{D}dra-driver"


@pytest.mark.parametrize(("labels", "kept"), [
    ({**NFD, "nvidia.com/gpu.present": "true", **CONTAINER, DRA: "true"}, True),  # the DRA stack's key swept
    ({**NFD, "nvidia.com/gpu.present": "true", **CONTAINER, f"{D}operands": "false", DRA: "true"}, True),
    ({**NFD, "nvidia.com/gpu.present": "true", **CONTAINER, DRA: "paused-for-driver-upgrade"}, True),
    ({"nvidia.com/gpu.present": "true", **CONTAINER, DRA: "true"}, False),  # no GPU any more: at once
])
def test_the_dra_plugins_label_stays_while_gpu_claims_are_held(labels: dict[str, str], kept: bool) -> None:
    """Item 11. updateGPUStateLabels: when gpu.deploy.dra-driver was set and the workload's labels drop it, it is
    put back while nodeHasDRAClaimPods (the kubelet plugin must unprepare those claims); the path for a node
    without GPUs (removeAllGPUStateLabels) removes it regardless. Without held claims it goes."""
    held = label_changes(labels, POLICY, gpu_claims_held=True)
    assert (DRA not in held) is kept
    assert label_changes(labels, POLICY)[DRA] is None
    others = {key: value for key, value in label_changes(labels, POLICY).items() if key != DRA}
    assert {key: value for key, value in held.items() if key != DRA} == others
