"""The controller's settings: the JSON document the render writes into its ConfigMap, read once at start.

The render knows what the controller must: which operands have DaemonSets (so which deploy labels to write), the
sandbox and MIG settings, the driver's `upgradePolicy` in the ClusterPolicy's own spelling, and the config
document's `remediation` section (read into the planner's policy by `gpu_operator.remediation`; without the key,
the policy's defaults: observe mode), and the drivers of their own under `driverGroups` (each one's DaemonSets,
pools, node selector and `upgradePolicy`; the cluster driver's pools under `driver.pools`). A change of any of
them changes the Deployment's template (a checksum annotation), so a new controller starts with the new settings.
The staged rollout (`rollout`: stages of pools with soak times, the alerts that halt a soak and the Prometheus to
ask) becomes the gate's :class:`~gpu_operator.upgrade.stages.RolloutPolicy`.
A document that does not parse is an error naming the key, never a controller running with half its settings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_operator.agents.controller.driver_owners import OWNER_LABEL, DriverOwner, DriverOwners
from gpu_operator.agents.driver_manager.settings import DrainOptions
from gpu_operator.facts.label_selector import LabelSelector, parse_selector
from gpu_operator.labels import LabellingPolicy
from gpu_operator.remediation import PolicyError, RemediationPolicy, policy_from_document
from gpu_operator.upgrade import CLUSTER_GROUP, UpgradePolicy
from gpu_operator.upgrade.stages import RolloutPolicy, RolloutStage

__all__ = ["ControllerSettings", "DriverGroupSettings", "PodStepOptions", "SettingsError", "parse_settings"]

DRIVER_APP = "nvidia-driver-daemonset"
VALIDATOR_APPS = ("nvidia-operator-validator", "nvidia-operator-validator-dra")


class SettingsError(ValueError):
    """The settings document is not what the render writes; the message names the key."""


@dataclass(frozen=True)
class PodStepOptions:
    """How an upgrade's pod steps treat a node's pods (`upgradePolicy.waitForCompletion`, `podDeletion`, `drain`)."""

    wait_pod_selector: LabelSelector = LabelSelector("")
    pod_deletion: DrainOptions = DrainOptions(timeout=300.0)
    """`upgradePolicy.podDeletion`: force, deleteEmptyDir and the time an eviction may be refused."""
    drain: DrainOptions = DrainOptions(timeout=300.0)
    """`upgradePolicy.drain`: the same, and the podSelector of the pods it drains."""


@dataclass(frozen=True)
class DriverGroupSettings:
    """A driver of its own (`driverGroups[]`): the apps of its DaemonSets and its own upgrade policy."""

    name: str
    apps: tuple[str, ...]
    upgrade: UpgradePolicy
    steps: PodStepOptions = PodStepOptions()


@dataclass(frozen=True)
class ControllerSettings:
    namespace: str
    labelling: LabellingPolicy
    upgrade: UpgradePolicy
    driver_enabled: bool = True
    """The driver operand is rendered: GPU nodes get the `gpu-driver-upgrade-enabled` annotation when upgrades run."""
    driver_app: str = DRIVER_APP
    validator_apps: tuple[str, ...] = VALIDATOR_APPS
    steps: PodStepOptions = PodStepOptions()
    """The cluster driver's pod steps (each driver group has its own)."""
    resync_seconds: float = 300.0
    remediation: RemediationPolicy = RemediationPolicy()
    """The `remediation` section: what the remediation planner does about GPU faults."""
    driver_groups: tuple[DriverGroupSettings, ...] = ()
    """The drivers of their own, each upgraded within its own policy (`gpu_operator.upgrade.groups`)."""
    driver_owners: DriverOwners = DriverOwners()
    """Which GPU node runs which driver of its own (the owner label, `.driver_owners`)."""
    rollout: RolloutPolicy | None = None
    """The staged rollout's stages (None: every driver group's nodes are admitted at once)."""
    prometheus_url: str = ""
    """Where the staged rollout reads the firing alerts (`rollout.prometheusUrl`)."""

    @property
    def driver_apps(self) -> frozenset[str]:
        """The `app` labels of every driver DaemonSet and its pods: the cluster driver's and the groups'."""
        return frozenset({self.driver_app, *(app for group in self.driver_groups for app in group.apps)})

    def group_of(self, app: str) -> str:
        """The driver group whose DaemonSet has this app (CLUSTER_GROUP for the cluster driver's, or none)."""
        return next((group.name for group in self.driver_groups if app in group.apps), CLUSTER_GROUP)

    def steps_of(self, group: str) -> PodStepOptions:
        """The pod step options of a driver group (the cluster driver's for CLUSTER_GROUP or an unknown one)."""
        return next((g.steps for g in self.driver_groups if g.name == group), self.steps)

    @property
    def policies(self) -> dict[str, UpgradePolicy]:
        """Each group's upgrade policy, the cluster driver's under CLUSTER_GROUP."""
        return {CLUSTER_GROUP: self.upgrade, **{group.name: group.upgrade for group in self.driver_groups}}


def _field(document: Mapping[str, Any], path: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value: Any = document
    for key in path.split("."):
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
            continue
        if not isinstance(value, Mapping) or key not in value:
            return default
        value = value[key]
    if isinstance(value, bool) and kind in (int, float):
        raise SettingsError(f"{path} must be a number, not {value!r}")
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise SettingsError(f"{path} must be {expected}, not {value!r}")
    return value


def _max_unavailable(value: int | str, at: str) -> int | str:
    text = str(value)
    number = text[:-1] if text.endswith("%") else text
    if not number.isdigit():
        raise SettingsError(f"{at}.maxUnavailable must be a count or a percentage such as '25%', not {value!r}")
    return value if isinstance(value, str) and value.endswith("%") else int(number)


def _remediation(document: Mapping[str, Any]) -> RemediationPolicy:
    try:
        return policy_from_document(_field(document, "remediation", dict, {}))
    except PolicyError as error:
        raise SettingsError("; ".join(f"remediation.{path}: {message}" if path else f"remediation: {message}"
                                      for path, message in error.problems)) from None


def parse_settings(text: str, namespace: str) -> ControllerSettings:
    """The settings of a JSON document (as the render writes it); SettingsError names a bad key."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise SettingsError(f"the settings are not JSON: {error}") from None
    if not isinstance(document, Mapping):
        raise SettingsError("the settings must be a JSON object")
    f = lambda path, kind, default: _field(document, path, kind, default)  # noqa: E731
    labelling = LabellingPolicy(
        f("labelling.sandboxEnabled", bool, False), f("labelling.defaultWorkload", str, "container"),
        f("labelling.migManagerEnabled", bool, False), f("labelling.migDefaultConfig", str, ""),
        f("labelling.sandboxMode", str, "kubevirt"))
    def policy(at: str) -> UpgradePolicy:
        return UpgradePolicy(
            auto_upgrade=f(f"{at}.autoUpgrade", bool, True),
            max_parallel_upgrades=f(f"{at}.maxParallelUpgrades", int, 1),
            max_unavailable=_max_unavailable(f(f"{at}.maxUnavailable", (int, str), "25%"), at),
            wait_for_jobs=bool(f(f"{at}.waitForCompletion.podSelector", str, "")),
            wait_timeout_seconds=f(f"{at}.waitForCompletion.timeoutSeconds", int, 0),
            drain=f(f"{at}.drain.enable", bool, False),
            validation_timeout_seconds=f("validationTimeoutSeconds", int, 600),
        )

    def group(index: int) -> DriverGroupSettings:
        at = f"driverGroups.{index}"
        return DriverGroupSettings(f(f"{at}.name", str, str(index)), names(f"{at}.daemonSets"),
                                   policy(f"{at}.upgradePolicy"), steps(f"{at}.upgradePolicy"))

    def names(path: str) -> tuple[str, ...]:
        values = f(path, list, [])
        if not all(isinstance(value, str) and value for value in values):
            raise SettingsError(f"{path} must be a list of names, not {values!r}")
        return tuple(values)

    def owner(index: int) -> DriverOwner:
        at = f"driverGroups.{index}"
        selector = f(f"{at}.nodeSelector", dict, {})
        if not all(isinstance(value, str) for value in selector.values()):
            raise SettingsError(f"{at}.nodeSelector must map label keys to values, not {selector!r}")
        return DriverOwner(f(f"{at}.name", str, str(index)), names(f"{at}.pools"), selector,
                           f(f"{at}.default", bool, False))

    def selector(path: str) -> LabelSelector:
        try:
            return parse_selector(f(path, str, ""))
        except ValueError as error:
            raise SettingsError(f"{path}: {error}") from None

    def options(at: str, pod_selector: LabelSelector) -> DrainOptions:
        return DrainOptions(f(f"{at}.force", bool, False), f(f"{at}.deleteEmptyDir", bool, False),
                            float(f(f"{at}.timeoutSeconds", int, 300)), pod_selector)

    def steps(at: str) -> PodStepOptions:
        return PodStepOptions(selector(f"{at}.waitForCompletion.podSelector"),
                              options(f"{at}.podDeletion", LabelSelector("")),
                              options(f"{at}.drain", selector(f"{at}.drain.podSelector")))

    upgrade = policy("upgradePolicy")
    count = len(f("driverGroups", list, []))
    groups = tuple(group(index) for index in range(count))
    owners = DriverOwners(tuple(owner(index) for index in range(count)), names("driver.pools"))
    if f("driver.ownerLabel", str, OWNER_LABEL) != OWNER_LABEL:
        raise SettingsError(f"driver.ownerLabel must be {OWNER_LABEL}, the label NVIDIA's operator routes by")
    return ControllerSettings(
        namespace=namespace, labelling=labelling, upgrade=upgrade, remediation=_remediation(document),
        driver_enabled=f("driver.enabled", bool, True), driver_app=f("driver.app", str, DRIVER_APP),
        validator_apps=tuple(f("validatorApps", list, list(VALIDATOR_APPS))),
        steps=steps("upgradePolicy"), resync_seconds=float(f("resyncSeconds", (int, float), 300)),
        driver_groups=groups, driver_owners=owners, rollout=_rollout(f), prometheus_url=f("rollout.prometheusUrl", str, ""),
    )


def _rollout(f: Callable[[str, type | tuple[type, ...], Any], Any]) -> RolloutPolicy | None:
    """The `rollout` section as the gate's policy (None without one)."""
    if f("rollout", dict, None) is None:
        return None
    stages = []
    for index in range(len(f("rollout.stages", list, []))):
        at = f"rollout.stages.{index}"
        pools = f(f"{at}.pools", list, [])
        if not pools or not all(isinstance(pool, str) and pool for pool in pools):
            raise SettingsError(f"{at}.pools must be a list of pool names, not {pools!r}")
        stages.append(RolloutStage(f(f"{at}.name", str, str(index)), tuple(pools), f(f"{at}.soakSeconds", int, 0)))
    if not stages:
        raise SettingsError("rollout.stages must list at least one stage")
    alerts = f("rollout.alerts", list, [])
    if not all(isinstance(alert, str) for alert in alerts):
        raise SettingsError(f"rollout.alerts must be a list of alert names, not {alerts!r}")
    return RolloutPolicy(tuple(stages), tuple(alerts))
