"""How a new driver reaches the nodes: the driver DaemonSets' update strategy, and what a render says about it.

NVIDIA's driver DaemonSet is `OnDelete`: nothing replaces a driver pod until its upgrade controller walks the node
through cordon, wait for jobs, GPU pod deletion and validation (`driver.upgradePolicy`, `autoUpgrade: true` by
default). Here that controller is ours, and it runs only from the agents image. Without it an `OnDelete` driver
would never change: a new `driver.version` would update the template and reach no node, silently. A render cannot
refuse that change (it does not see the version the cluster runs), so the path without a controller upgrades:

* the operator controller runs: `OnDelete`, and the controller upgrades node by node within the upgrade policy;
* no controller, `autoUpgrade: true`: `RollingUpdate`. Kubernetes' DaemonSet controller replaces one driver pod
  at a time (`maxParallelUpgrades`; with 0, `maxUnavailable`; a count of both, the smaller), and waits for the new
  pod to be ready (its startup probe: the modules loaded and `nvidia-smi` answering) before the next. The new
  pod's driver manager (init container `k8s-driver-manager`) cordons the node, evicts its GPU pods, unloads the
  old modules and uncordons, as it does for any driver pod that finds an older driver loaded; a driver that does
  not come up stops the rollout on its first node. There is no wait for jobs, no validation gate and no stage;
* `autoUpgrade: false` (or sandbox workloads, where NVIDIA's upgrade controller is off): `OnDelete`, as in NVIDIA's
  operator: a node gets the new driver when its driver pod is deleted, and the render says so.

Each driver of its own (:mod:`gpu_operator.config.driver_groups`) follows its own upgrade policy. With the
controller and `operator.driver.rollout`, the render also states the stage plan.
"""

from __future__ import annotations

from typing import Literal

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.clusterpolicy.driver import DriverUpgradePolicy
from gpu_operator.config.driver_groups import driver_groups
from gpu_operator.render.k8s import Object

__all__ = ["UpdateMode", "driver_update_notes", "update_mode", "update_strategy"]

#: `controller`: the operator controller upgrades; `rolling`: the DaemonSet rolls by itself; `manual`: OnDelete.
UpdateMode = Literal["controller", "rolling", "manual"]

_CONTROLLER_WAY = "set agents.image (or agents.build) for the operator controller, which upgrades node by node"


def update_mode(config: GpuStackConfig, policy: DriverUpgradePolicy) -> UpdateMode:
    """Who replaces the driver pods after a change of one driver (`policy` is that driver's upgrade policy)."""
    if not policy.auto_upgrade or config.operator.sandbox_workloads.enabled:
        return "manual"
    return "controller" if config.controller_enabled else "rolling"


def _max_unavailable(policy: DriverUpgradePolicy) -> int | str:
    parallel, unavailable = policy.max_parallel_upgrades, policy.max_unavailable
    if isinstance(unavailable, str) and unavailable.isdigit():
        unavailable = int(unavailable)
    if parallel == 0:
        return unavailable
    return min(parallel, unavailable) if isinstance(unavailable, int) else parallel


def update_strategy(config: GpuStackConfig, policy: DriverUpgradePolicy) -> Object:
    """The `updateStrategy` of a driver DaemonSet."""
    if update_mode(config, policy) != "rolling":
        return {"type": "OnDelete"}
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": _max_unavailable(policy)}}


def _drivers(config: GpuStackConfig) -> list[tuple[str, str, DriverUpgradePolicy]]:
    """(what, where its policy is written, policy) of every driver the render has."""
    found = []
    if not config.operator.driver.use_nvidia_driver_crd:
        found.append(("the cluster's driver", "operator.driver.upgradePolicy", config.operator.driver.upgrade_policy))
    for group, spec in driver_groups(config):
        where = f"{group.path}.upgradePolicy" if "upgradePolicy" in group.written_keys else \
            "operator.driver.upgradePolicy"
        found.append((f"driver {group.name}", where, spec.upgrade_policy))
    return found


def _stage_plan_note(config: GpuStackConfig) -> list[str]:
    """The staged rollout's plan in words (the controller's settings carry it too, for the preview's diff)."""
    rollout = config.operator.driver.rollout
    if rollout is None or not config.controller_enabled:
        return []
    return ["a driver change rolls out in stages (operator.driver.rollout), each only once the one before has every "
            "node validated and has soaked: " + "; ".join(rollout.plan_lines())]


def driver_update_notes(config: GpuStackConfig) -> list[str]:
    """One note per way a driver change reaches the nodes (the stage plan when it is staged), unless the operator
    controller upgrades them all at once."""
    if not config.operator.driver.enabled:
        return []
    rolling, manual = [], []
    for what, where, policy in _drivers(config):
        mode = update_mode(config, policy)
        if mode == "rolling":
            rolling.append(f"{what} ({_max_unavailable(policy)} node(s) at a time, from {where})")
        elif mode == "manual":
            manual.append(f"{what} ({where}.autoUpgrade is false)" if not policy.auto_upgrade
                          else f"{what} (sandbox workloads are on, and NVIDIA upgrades no driver then)")
    notes = []
    if rolling:
        notes.append(
            f"driver upgrades without the operator controller: a driver change rolls out by the DaemonSet itself "
            f"(RollingUpdate) for "
            f"{'; '.join(rolling)}: each new driver pod's driver manager cordons its node, evicts the GPU pods and "
            f"swaps the driver, and a driver that does not come up stops the rollout there; there is no wait for "
            f"jobs, no validation gate and no pool-by-pool stage: {_CONTROLLER_WAY}")
    if manual:
        notes.append(
            f"a driver change reaches no node by itself for {'; '.join(manual)}: the driver DaemonSet is OnDelete, "
            f"so a node gets the new driver only when its driver pod is deleted; set autoUpgrade: true"
            + ("" if config.controller_enabled else f" (the DaemonSet then rolls node by node), or {_CONTROLLER_WAY}"))
    return [*_stage_plan_note(config), *notes]
