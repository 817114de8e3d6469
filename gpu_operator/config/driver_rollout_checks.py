"""Rules about `operator.driver.rollout` that need the whole document.

* Only the operator controller gates a rollout: without it (no agents image, or `controller.enabled: false`) the
  stages would be a silent no-op, so they are refused with the two ways out.
* A rollout needs something to roll: the driver operand on, and `upgradePolicy.autoUpgrade` true (with it off the
  controller upgrades no node, so the first stage would wait for good).
* A stage's pools are the document's pools (when it has any: a document without pools may describe a cluster
  whose pools it does not create, and the controller reads a node's pool from its AKS pool label), and a pool whose
  driver AKS installs (`gpuDriver: aks`) has nothing for the operator to roll.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.driver_rollout import ALL_OTHER_POOLS
from gpu_operator.config.errors import Problem
from gpu_operator.config.suggestions import did_you_mean

__all__ = ["DRIVER_ROLLOUT_CHECKS"]

Check = Callable[[GpuStackConfig], Iterator[Problem]]
_AT = "operator.driver.rollout"


def _something_rolls_it(doc: GpuStackConfig) -> Iterator[Problem]:
    driver = doc.operator.driver
    if driver.rollout is None:
        return
    if not doc.controller_enabled:
        yield Problem(_AT, "only the operator controller runs a staged rollout, and none runs: set agents.image (an "
                      "image you pushed) or agents.build (and leave controller.enabled on), or remove rollout")
    if not driver.enabled:
        yield Problem(_AT, "operator.driver.enabled is false, so there is no driver to roll out: remove rollout")
    elif not driver.upgrade_policy.auto_upgrade:
        yield Problem(_AT, "operator.driver.upgradePolicy.autoUpgrade is false, so the controller upgrades no node "
                      "and the first stage would wait for good: set autoUpgrade to true, or remove rollout")


def _stage_pools_exist(doc: GpuStackConfig) -> Iterator[Problem]:
    rollout = doc.operator.driver.rollout
    names = [pool.name for pool in doc.pools]
    if rollout is None or not names:
        return
    for index, stage in enumerate(rollout.stages):
        for position, pool in enumerate(stage.pools):
            where = f"{_AT}.stages[{index}].pools[{position}]"
            if pool == ALL_OTHER_POOLS:
                continue
            if pool not in names:
                hint = did_you_mean(pool, names)
                yield Problem(where, f"no pool named {pool!r} in pools ({', '.join(names)})"
                              + (f": {hint}" if hint else ""))
            elif doc.pool(pool).gpu_driver != "operator":
                yield Problem(where, f"pool {pool!r} has gpuDriver: aks (AKS installs its driver), so the "
                              "operator rolls no driver there: remove it from the stage")


DRIVER_ROLLOUT_CHECKS: tuple[Check, ...] = (_something_rolls_it, _stage_pools_exist)
