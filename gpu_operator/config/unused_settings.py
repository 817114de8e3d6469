"""Settings of components the stack does not deploy: said once at render, never dropped without a word.

A section may be written for a component that this document does not deploy: `network.*` without an InfiniBand
pool, `dra.*` without a DRA pool, `nfd.*` while the Network Operator's NFD runs instead, `controller.*` or
the controller's part of `operator.driver.upgradePolicy` without the operator controller (the driver DaemonSet then
rolls a new driver out itself, and nothing waits for jobs, times GPU pod deletion or drains), `monitoring.*` with monitoring off. None of them is an error (an environment may
turn the component on later), but rendering them away silently would let a reader believe they apply. Each
becomes one note naming the keys, why they do not apply, and the switch that makes them apply; the CLI prints the
notes with the render's other notes.

The notes read the effective config (:mod:`gpu_operator.config.effective`): which keys the user wrote is what each
model's `model_fields_set` keeps, and whether a component is deployed is the same decision the render takes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pydantic import BaseModel

from gpu_operator.config.clusterpolicy.driver import DriverSpec
from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.dra import dra_wanted
from gpu_operator.config.network import network_wanted

__all__ = ["UNUSED_SECTIONS", "UnusedSection", "unused_setting_notes"]


@dataclass(frozen=True)
class UnusedSection:
    """Keys of `section` (but `ignored`) that have no effect when `why(doc)` gives a reason (None: they apply)."""

    section: str
    model: Callable[[GpuStackConfig], BaseModel]
    why: Callable[[GpuStackConfig], str | None]
    ignored: frozenset[str] = frozenset({"enabled"})


def _network(doc: GpuStackConfig) -> str | None:
    if network_wanted(doc.network, doc.pools):
        return None
    if doc.network.enabled is False:
        return "network.enabled is false, so the Network Operator is not deployed"
    return ("no pool has InfiniBand, so the Network Operator is not deployed; set network.enabled: true to deploy it "
            "anyway")


def _dra(doc: GpuStackConfig) -> str | None:
    if dra_wanted(doc.dra, doc.pools):
        return None
    if doc.dra.enabled is False:
        return "dra.enabled is false, so the DRA driver is not deployed"
    return "no pool has gpuAllocation: dra, so the DRA driver is not deployed; set it on a pool to deploy it"


def _nfd(doc: GpuStackConfig) -> str | None:
    if doc.nfd.enabled:
        return None
    if network_wanted(doc.network, doc.pools):
        return "the Network Operator runs its own Node Feature Discovery in place of this one"
    return "nfd.enabled is false, so Node Feature Discovery is not installed by the stack"


_NO_CONTROLLER = ("the operator controller does not run (it needs agents.image or agents.build, and controller.enabled "
                  "not false)")


def _controller(doc: GpuStackConfig) -> str | None:
    return None if doc.controller_enabled else _NO_CONTROLLER


def _no_driver(doc: GpuStackConfig) -> str | None:
    return None if doc.operator.driver.enabled else "operator.driver.enabled is false, so there is no driver to upgrade"


def _controller_steps(doc: GpuStackConfig) -> str | None:
    if not doc.operator.driver.enabled or doc.controller_enabled:
        return None
    return (f"{_NO_CONTROLLER}: the driver DaemonSet rolls a new driver out by itself (autoUpgrade, "
            "maxParallelUpgrades and maxUnavailable apply to it), and nothing waits for jobs, times the GPU pod "
            "deletion or drains a node as the controller does")


def _monitoring(doc: GpuStackConfig) -> str | None:
    return None if doc.monitoring.enabled else "monitoring.enabled is false, so no alert, rule or dashboard is rendered"


#: The sections whose keys may go unused, in document order.
UNUSED_SECTIONS: tuple[UnusedSection, ...] = (
    # NodeFeatureRules serve whichever NFD runs (the Network Operator's too), so `nodefeaturerules` always applies
    UnusedSection("nfd", lambda doc: doc.nfd, _nfd, ignored=frozenset({"enabled", "node_feature_rules"})),
    UnusedSection("operator.driver", lambda doc: doc.operator.driver, _no_driver,
                  ignored=frozenset(DriverSpec.model_fields) - {"upgrade_policy"}),
    UnusedSection("operator.driver.upgradePolicy", lambda doc: doc.operator.driver.upgrade_policy, _controller_steps,
                  ignored=frozenset({"auto_upgrade", "max_parallel_upgrades", "max_unavailable"})),
    UnusedSection("network", lambda doc: doc.network, _network),
    UnusedSection("monitoring", lambda doc: doc.monitoring, _monitoring),
    UnusedSection("dra", lambda doc: doc.dra, _dra, ignored=frozenset({"enabled", "claim_templates"})),
    UnusedSection("controller", lambda doc: doc.controller, _controller),
)


def _keys(model: BaseModel, ignored: Iterable[str]) -> list[str]:
    """The document keys (aliases) the user wrote in `model`, in the model's field order."""
    fields = type(model).model_fields
    return [fields[name].alias or name for name in fields if name in model.model_fields_set and name not in ignored]


def unused_setting_notes(doc: GpuStackConfig) -> list[str]:
    """One note per section whose written keys have no effect in this document."""
    notes: list[str] = []
    for entry in UNUSED_SECTIONS:
        reason = entry.why(doc)
        keys = _keys(entry.model(doc), entry.ignored) if reason is not None else []
        if keys:
            written = ", ".join(f"{entry.section}.{key}" for key in keys)
            verb = "has" if len(keys) == 1 else "have"
            notes.append(f"{written} {verb} no effect: {reason}")
    return notes
