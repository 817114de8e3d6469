"""One MIG reconfiguration of a node, driven by its `nvidia.com/mig.config` label.

The sequence is NVIDIA's mig-manager's (mig-parted pkg/mig/reconfigure/reconfigure.go `Run`): read the node's
labels, validate the config; if the GPUs already match, `success`. GPUs that are not MIG-capable are left out
where the config says `devices: all` (or disables MIG on them); enabling MIG on one by index is an error.
Otherwise set `nvidia.com/mig.config.state=pending`, pause the GPU operands through their deploy labels
(:mod:`.operand_labels`), wait for their pods to leave the node (the operands' own pods by their `app` label, and
in every namespace the DaemonSet pods whose node selector names `nvidia.com/gpu.deploy.client`; a pod still
Terminating counts as there), delete the CUDA and device-plugin validator pods, stop the host's GPU clients when
`WITH_SHUTDOWN_HOST_GPU_CLIENTS` asks for it (:mod:`.host_clients`; with the kubelet among them when the MIG mode
changes, then a pause for the driver to let go of the GPUs), then apply: destroy every compute and GPU instance,
set the MIG mode, create the new instances, then refresh CDI when it is on (:mod:`.cdi`) and start the host
clients again (on the failure paths too). On success the operator validator pod is deleted (so it
revalidates). A MIG mode that stays pending is retried after a reset of the GPUs; if it is still pending and
`WITH_REBOOT` is on, the state is `rebooting` and the host reboots with the operands still paused: the next run
finishes the change, or fails when the mode is still pending after the reboot. On any other failure the
previous layout is put back and the state is `failed`, with the reason in the node's
`nvidia.com/mig.config.state.reason` annotation (removed again by the next success).

Every end but `rebooting` is NVIDIA's `setState`: the operand labels get their values from before the change
back (also in the already-applied path and on a failure before anything was paused), then the state is written.
When the node's labels cannot be read, only `failed` is written: there is nothing to restore from.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pynvml

from gpu_operator.agents.kube.client import KubeClient
from gpu_operator.agents.kube.errors import KubeError, NotFound
from gpu_operator.agents.kube.resources import NODES, PODS
from gpu_operator.agents.mig_manager.cdi import CdiError
from gpu_operator.agents.mig_manager.config import GpuLayout, MigConfigError, MigPartedConfig, matches, select
from gpu_operator.agents.mig_manager.hardware import GpuMigState, MigHardware, MigHardwareError, MigModePending
from gpu_operator.agents.mig_manager.host_clients import HostClientsError, HostGpuClients
from gpu_operator.agents.mig_manager.operand_labels import CLIENT_LABEL, DEPLOY_LABELS, PAUSED, OperandLabels

__all__ = [
    "CLIENT_LABEL",
    "CONFIG_LABEL",
    "DEPLOY_LABELS",
    "PAUSED",
    "REASON_ANNOTATION",
    "STATE_LABEL",
    "Reconfigurer",
    "Settings",
]

_log = logging.getLogger(__name__)

CONFIG_LABEL = "nvidia.com/mig.config"
STATE_LABEL = "nvidia.com/mig.config.state"
REASON_ANNOTATION = "nvidia.com/mig.config.state.reason"
#: Validator pods deleted before the change, and the one deleted after it (on DRA pools, its `-dra` twin).
_VALIDATORS_BEFORE = ("nvidia-cuda-validator", "nvidia-device-plugin-validator")
_VALIDATOR_AFTER = "nvidia-operator-validator,nvidia-operator-validator-dra"


def _pod_name(pod: Mapping[str, object]) -> str:
    metadata = pod.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    return f"{metadata.get('namespace')}/{metadata.get('name')}"


class ReconfigureFailed(Exception):
    """A step failed; the message is the reason put on the node."""


@dataclass(frozen=True, slots=True)
class Settings:
    """The node, the operands' namespace, how long to wait for their pods, whether a reboot may finish a mode
    change that a GPU reset did not (`WITH_REBOOT`), the host's kubelet unit stopped with the host GPU clients
    across a MIG mode change (`HOST_KUBELET_SYSTEMD_SERVICE`; empty: never), and how long to let the driver
    settle after the host clients stopped before a mode change (NVIDIA waits 30 s)."""

    node: str
    namespace: str
    pod_timeout: float = 300.0
    poll_interval: float = 2.0
    with_reboot: bool = False
    kubelet_service: str = "kubelet.service"
    host_clients_settle: float = 30.0


class Reconfigurer:
    """Applies named MIG configs from one config file to the GPUs of one node."""

    def __init__(
        self,
        kube: KubeClient,
        hardware: MigHardware,
        config: MigPartedConfig,
        settings: Settings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        after_apply: Callable[[], None] | None = None,
        reset: Callable[[list[str]], str | None] | None = None,
        reboot: Callable[[], None] | None = None,
        host_clients: HostGpuClients | None = None,
    ) -> None:
        self._kube = kube
        self._hardware = hardware
        self._config = config
        self._settings = settings
        self._sleep = sleep
        self._clock = clock
        self._after_apply = after_apply
        self._reset = reset
        self._reboot = reboot
        self._clients = host_clients

    # -- the node ------------------------------------------------------------------------------------------

    def _labels(self) -> dict[str, str]:
        node = self._kube.get(NODES, self._settings.node)
        return dict((node.get("metadata") or {}).get("labels") or {})

    def _patch(self, labels: Mapping[str, str | None], annotations: Mapping[str, str | None] | None = None) -> None:
        metadata: dict[str, object] = {"labels": dict(labels)}
        if annotations is not None:
            metadata["annotations"] = dict(annotations)
        self._kube.patch(NODES, self._settings.node, {"metadata": metadata})

    def _set_state(self, state: str, reason: str | None = None) -> None:
        _log.info("%s=%s%s", STATE_LABEL, state, f" ({reason})" if reason else "")
        self._patch({STATE_LABEL: state}, {REASON_ANNOTATION: reason})

    # -- operands ------------------------------------------------------------------------------------------

    def _node_pods(self, apps: list[str]) -> list[dict[str, object]]:
        return self._kube.list(
            PODS, self._settings.namespace, labels={"app": apps}, fields={"spec.nodeName": self._settings.node}
        )

    def _client_pods(self) -> list[dict[str, object]]:
        """Pods on this node, in any namespace, that a DaemonSet selecting on `CLIENT_LABEL` controls."""
        found = []
        for pod in self._kube.list(PODS, None, fields={"spec.nodeName": self._settings.node}):
            metadata = pod.get("metadata") or {}
            owners = metadata.get("ownerReferences") or []
            controller = next((o for o in owners if o.get("controller")), None)
            if controller is None or controller.get("kind") != "DaemonSet":
                continue
            if CLIENT_LABEL in ((pod.get("spec") or {}).get("nodeSelector") or {}):
                found.append(pod)
        return found

    def _wait_for_operands(self, paused: frozenset[str]) -> None:
        """Until the paused operands' pods and the GPU clients' DaemonSet pods have left the node (Terminating
        ones included), or `pod_timeout` passes."""
        apps = [app for label, app in DEPLOY_LABELS.items() if app is not None and label in paused]
        deadline = self._clock() + self._settings.pod_timeout
        while True:
            pods = (self._node_pods(apps) if apps else []) + self._client_pods()
            remaining = [_pod_name(pod) for pod in pods]
            if not remaining:
                return
            _log.info("waiting for %d GPU client pod(s) to leave the node: %s", len(remaining), ", ".join(remaining))
            if self._clock() >= deadline:
                raise ReconfigureFailed(
                    f"operand pods still on the node after {self._settings.pod_timeout:g}s: "
                    f"{', '.join(sorted(remaining))}"
                )
            self._sleep(self._settings.poll_interval)

    def _delete_pods(self, apps: str) -> None:
        for pod in self._node_pods(apps.split(",")):
            try:
                self._kube.delete(PODS, pod["metadata"]["name"], self._settings.namespace)  # type: ignore[index]
            except NotFound:
                pass

    # -- the GPUs ------------------------------------------------------------------------------------------

    def _plan(self, name: str, gpus: list[GpuMigState]) -> dict[int, GpuLayout]:
        """The layout per MIG-capable GPU. A GPU that is not MIG-capable is skipped where a layout matches it by
        `devices: all` or leaves MIG off; a layout that enables MIG on it by index is an error."""
        ids = [(g.index, g.pci_id) for g in gpus]
        by_index = {g.index: g for g in gpus}
        for layout, index in matches(self._config, name, ids):
            gpu = by_index[index]
            if not gpu.capable and layout.devices != "all" and layout.mig_enabled:
                raise MigConfigError(
                    f"config {name!r} enables MIG on GPU {index} ({gpu.pci_id}), which is not MIG-capable"
                )
        plan = {i: layout for i, layout in select(self._config, name, ids).items() if by_index[i].capable}
        for index, layout in plan.items():
            gpu = by_index[index]
            if layout.devices:
                offered = self._hardware.device_profiles(index)
                unknown = sorted(set(layout.devices) - set(offered))
                if unknown:
                    raise MigConfigError(
                        f"config {name!r}: GPU {index} ({gpu.pci_id}) has no MIG profile {', '.join(unknown)}; "
                        f"it offers {', '.join(offered)}"
                    )
        return plan

    @staticmethod
    def _mode_change(plan: Mapping[int, GpuLayout], gpus: list[GpuMigState]) -> bool:
        by_index = {g.index: g for g in gpus}
        return any(by_index[i].enabled != layout.enabled or by_index[i].mode_pending for i, layout in plan.items())

    @staticmethod
    def _matches(plan: Mapping[int, GpuLayout], gpus: list[GpuMigState]) -> bool:
        by_index = {g.index: g for g in gpus}
        return all(
            by_index[i].enabled == layout.enabled and by_index[i].devices == layout.devices
            for i, layout in plan.items()
        )

    def _apply(self, plan: Mapping[int, GpuLayout], gpus: list[GpuMigState]) -> None:
        """Clear, set the modes (resetting the GPUs when a mode stays pending), then create the instances."""
        by_index = {g.index: g for g in gpus}
        for index, layout in sorted(plan.items()):
            gpu = by_index[index]
            if gpu.enabled:
                self._hardware.clear(index)
            if gpu.enabled != layout.enabled or gpu.mode_pending:
                self._hardware.set_mode(index, layout.enabled)
        pending = [g for g in self._hardware.gpus() if g.mode_pending]
        if pending and self._reset is not None:
            self._reset([g.bus_id for g in self._hardware.gpus() if g.capable])
            pending = [g for g in self._hardware.gpus() if g.mode_pending]
        if pending:
            raise MigModePending(f"MIG mode change pending on GPU {', '.join(str(g.index) for g in pending)}")
        for index, layout in sorted(plan.items()):
            if layout.enabled:
                self._hardware.create(index, layout.devices)

    def _rollback(self, previous: list[GpuMigState], name: str, error: Exception) -> ReconfigureFailed:
        """Put the previous layout back; the failure to report, saying whether that worked."""
        plan = {g.index: GpuLayout(g.enabled, g.devices) for g in previous if g.capable}
        try:
            self._apply(plan, self._hardware.gpus())
        except (MigHardwareError, pynvml.NVMLError) as rollback_error:
            return ReconfigureFailed(
                f"applying {name!r} failed: {error}; restoring the previous layout failed too: {rollback_error}"
            )
        return ReconfigureFailed(f"applying {name!r} failed, previous layout restored: {error}")

    # -- the whole sequence --------------------------------------------------------------------------------

    def reconfigure(self, name: str) -> str:
        """Apply config `name`; returns the final state: `success`, `failed`, or `rebooting` (host going down)."""
        try:
            labels = self._labels()
        except KubeError as error:
            _log.error("cannot read node %s: %s", self._settings.node, error)
            self._try_failed(f"cannot read the node's labels: {error}")
            return "failed"
        operands = OperandLabels.read(labels)
        try:
            gpus = self._hardware.gpus()
            plan = self._plan(name, gpus)
        except (MigConfigError, MigHardwareError, pynvml.NVMLError) as error:
            return self._finish(operands, "failed", str(error))
        if self._matches(plan, gpus):
            return self._finish(operands, "success")
        mode_change = self._mode_change(plan, gpus)
        if labels.get(STATE_LABEL) == "rebooting" and mode_change:
            return self._finish(operands, "failed", f"the MIG mode of {name!r} is still pending after the reboot")
        try:
            self._set_state("pending")
        except KubeError as error:
            return self._finish(operands, "failed", f"cannot set {STATE_LABEL}=pending: {error}")
        try:
            if self._change(name, plan, gpus, operands, mode_change):
                return "rebooting"
        except (ReconfigureFailed, KubeError, CdiError, HostClientsError) as error:
            reason = str(error)
            if self._clients is not None and self._clients.stopped:
                try:
                    self._clients.restart()
                except HostClientsError as restart_error:
                    reason += f"; {restart_error}"
            return self._finish(operands, "failed", reason)
        return self._finish(operands, "success")

    def _change(self, name: str, plan: Mapping[int, GpuLayout], gpus: list[GpuMigState], operands: OperandLabels,
                mode_change: bool) -> bool:
        """Pause, stop the host clients, apply, start them again; True when the host is rebooting to finish."""
        pause = operands.pause()
        if pause:
            self._patch(pause)
        self._wait_for_operands(operands.paused)
        for app in _VALIDATORS_BEFORE:
            self._delete_pods(app)
        if self._clients is not None:
            kubelet = self._settings.kubelet_service
            self._clients.stop(also=(kubelet,) if mode_change and kubelet else ())
            if mode_change:
                self._sleep(self._settings.host_clients_settle)
        try:
            self._apply(plan, gpus)
        except MigModePending as error:
            if not (self._settings.with_reboot and self._reboot is not None):
                raise self._rollback(gpus, name, error) from error
            self._set_state("rebooting", f"{error}; rebooting the node")
            try:
                self._reboot()
            except MigHardwareError as reboot_error:
                raise self._rollback(gpus, name, reboot_error) from reboot_error
            return True
        except (MigHardwareError, pynvml.NVMLError) as error:
            raise self._rollback(gpus, name, error) from error
        if self._after_apply is not None:
            self._after_apply()
        if self._clients is not None:
            try:
                self._clients.restart()
            except HostClientsError as error:
                raise ReconfigureFailed(f"{name!r} was applied, but {error}") from error
        self._delete_pods(_VALIDATOR_AFTER)
        return False

    def _finish(self, operands: OperandLabels, state: str, reason: str | None = None) -> str:
        """Every operand label back to its value from before the change, then the final state."""
        restore = operands.restore()
        if restore:
            self._patch(restore)
        self._set_state(state, reason)
        return state

    def _try_failed(self, reason: str) -> None:
        try:
            self._set_state("failed", reason)
        except KubeError as error:
            _log.error("cannot set %s=failed on node %s: %s", STATE_LABEL, self._settings.node, error)
