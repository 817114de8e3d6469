"""What some policies need to know beyond the objects: the pools' taints and NICs, the Prometheus selector.

Built from the config (`PolicyContext.from_config`) by `gpu-operator check`; a CrossGuard pack would take the same
values as policy config. Empty values switch the policies that need them off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu_operator.config.document import GpuStackConfig

__all__ = ["PolicyContext"]


@dataclass(frozen=True)
class PolicyContext:
    pool_taints: tuple[tuple[dict[str, str], ...], ...] = ()
    """Per GPU pool, its node taints (`key`, `value`, `effect`): a GPU pod must tolerate one pool's set."""
    max_infiniband_nics: int | None = None
    """The most InfiniBand NICs a node of the fleet has (None: unknown, the check is off)."""
    prometheus_selector: dict[str, str] = field(default_factory=dict)
    """Labels the Prometheus Operator selects monitors and rules by (e.g. release: kube-prometheus)."""
    production: bool = False
    """The stack is a production one (`gpu-operator check --production`, or the pack's `production` config)."""
    max_parallel_upgrades: int | None = None
    """`driver.upgradePolicy.maxParallelUpgrades` when automatic driver upgrades are on (0: no limit)."""
    unregistered_infiniband_pools: tuple[str, ...] = ()
    """AKS pools with InfiniBand whose config does not register `AKSInfinibandSupport`
    (`aks.registerInfinibandFeature`)."""

    @classmethod
    def from_config(cls, config: GpuStackConfig, production: bool = False) -> PolicyContext:
        from gpu_operator.render.aks.infiniband import unregistered_infiniband_pools

        taints = tuple(
            tuple({"key": t.key, "value": t.value or "", "effect": t.effect} for t in pool.node_taints)
            for pool in config.pools
        )
        nics = [pool.hardware.infiniband.nics for pool in config.pools
                if pool.hardware is not None and pool.hardware.infiniband is not None]
        monitoring = config.monitoring
        upgrades = config.operator.driver.upgrade_policy
        return cls(
            pool_taints=taints,
            max_infiniband_nics=max(nics) if nics else (0 if config.pools else None),
            prometheus_selector=monitoring.selector_labels(),
            production=production,
            max_parallel_upgrades=upgrades.max_parallel_upgrades if upgrades.auto_upgrade else None,
            unregistered_infiniband_pools=unregistered_infiniband_pools(config),
        )

    def describe(self) -> dict[str, Any]:
        """The facts as the CrossGuard pack's policy config (gpu_operator.policy.crossguard `CONFIG_SCHEMA`)."""
        return {"poolTaints": [list(t) for t in self.pool_taints], "maxInfinibandNics": self.max_infiniband_nics,
                "prometheusSelector": self.prometheus_selector, "production": self.production,
                "maxParallelUpgrades": self.max_parallel_upgrades,
                "unregisteredInfinibandPools": list(self.unregistered_infiniband_pools)}
