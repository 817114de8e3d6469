"""The driver manager's decisions: a pure state machine from (settings, progress, snapshot) to the next action.

The first snapshot picks a **route** (NVIDIA's k8s-driver-manager order, reference §9.2):

- `host-driver`: the host has a driver of its own. Label the node `nvidia.com/gpu.deploy.driver=pre-installed`,
  wait (60 s by default) so the driver pod stops being scheduled, and exit 1.
- `no-driver-loaded`: fresh boot or install. Clean what a previous driver container left (its rootfs mount, its
  PID file), unload nouveau, unbind vfio-pci, wait for MOFED when GPUDirect RDMA is on, exit 0.
- `driver-matches`: the loaded driver has the `DRIVER_CONFIG_DIGEST` this pod would install. Pause the operands,
  wait for them to stop, clean the stale mount, restore, exit 0 without disturbing the GPU workloads.
- `upgrade`: pause the operands and wait for them; with GPU pod eviction on, cordon and evict the GPU pods
  (on failure, with auto-drain, drain the node); unload the modules (on failure, with auto-drain, drain and
  unload again); clean, unbind vfio-pci, wait for MOFED, uncordon, restore, unload nouveau, exit 0.

A route is a table of **steps**. A step looks at the snapshot and says Done (what it wants holds: go on), an
action that makes it hold, a wait, or a failure. The step in progress is evaluated again after every action, on
a new snapshot, so an action is only asked for while what it does is not yet true. A failed fatal step turns the
route into `cleanup` (uncordon what this program cordoned, restore the labels, exit 1): the labels are restored on
every path. Steps marked non-fatal record their error and let the next steps react to it (a drain after failed
evictions, a drain and a second unload after a failed unload).

With the node annotation `nvidia.com/gpu-driver-upgrade-enabled=true` the operator's upgrade controller owns
eviction and drain, so both are off here whatever the settings say. Differences from NVIDIA, on purpose: the
node is uncordoned only when this program cordoned it (annotation `nvidia.com/gpu-driver-manager.cordoned`),
never when someone else had; labels absent on the node stay absent rather than being created empty; and an
eviction that a disruption budget refuses fails once `DRAIN_TIMEOUT_SECONDS` has passed (with 0, NVIDIA's
default, it is retried for ever, as NVIDIA does).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpu_operator.agents.driver_manager.actions import (
    Cordon,
    Decision,
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
    PRE_INSTALLED,
    UPGRADE_ENABLED_ANNOTATION,
    paused_values,
    restored_values,
)
from gpu_operator.agents.driver_manager.pods import (
    PodFacts,
    drain_pods,
    gpu_pods,
    refusals,
    stale_operand_pods,
)
from gpu_operator.agents.driver_manager.settings import Settings
from gpu_operator.agents.driver_manager.snapshot import NodeFacts, Snapshot

__all__ = [
    "DRIVER_MODULES",
    "PID_FILE",
    "POLICY_NOTE",
    "ROUTES",
    "Done",
    "Fail",
    "Plan",
    "Progress",
    "Route",
    "Step",
    "View",
    "blocked",
    "classify",
    "decide",
    "failed",
    "operand_keys",
    "stop",
]

#: Unloaded in this order, users of `nvidia` first (NVIDIA's list, with nvidia_drm, which holds nvidia_modeset).
DRIVER_MODULES = (
    "nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia_peermem", "nvidia_fs", "nvidia_vgpu_vfio", "gdrdrv", "nvidia",
)
PID_FILE = "/run/nvidia/nvidia-driver.pid"
POLICY_NOTE = (
    "GPU pod eviction and auto drain by the driver manager are disabled by the upgrade policy "
    f"({UPGRADE_ENABLED_ANNOTATION}=true): the GPU operator's upgrade controller evicts and drains instead"
)


class Route(enum.Enum):
    HOST_DRIVER = "host-driver"
    FRESH = "no-driver-loaded"
    KEEP = "driver-matches"
    UPGRADE = "upgrade"
    CLEANUP = "cleanup"


@dataclass(frozen=True)
class Progress:
    """What the program has decided and done so far: the route, the step in it, and what went wrong."""

    route: Route | None = None
    step: int = 0
    upgrade_policy: bool = False
    failure: str = ""
    """Why the route became `cleanup`."""
    errors: Mapping[str, str] = field(default_factory=dict)
    """Step name -> the error a non-fatal step recorded."""
    started: Mapping[str, float] = field(default_factory=dict)
    """Step name -> when it was first evaluated (waits and timeouts count from there)."""
    blocked: Mapping[str, float] = field(default_factory=dict)
    """Pod `namespace/name` -> when its eviction was last refused (a disruption budget)."""
    refusals: Mapping[str, str] = field(default_factory=dict)
    """Pod `namespace/name` -> the API server's reason for the last refused eviction."""


@dataclass(frozen=True)
class View:
    """What a step reads: the settings, the progress and the current snapshot."""

    settings: Settings
    progress: Progress
    snapshot: Snapshot
    step: str

    @property
    def node(self) -> NodeFacts:
        return self.snapshot.node

    @property
    def labels(self) -> Mapping[str, str]:
        return self.snapshot.node.labels

    @property
    def eviction_enabled(self) -> bool:
        return self.settings.enable_gpu_pod_eviction and not self.progress.upgrade_policy

    @property
    def auto_drain(self) -> bool:
        return self.settings.enable_auto_drain and not self.progress.upgrade_policy

    def elapsed(self) -> float:
        return self.snapshot.now - self.progress.started.get(self.step, self.snapshot.now)


@dataclass(frozen=True)
class Done:
    """What the step wants holds."""


@dataclass(frozen=True)
class Fail:
    reason: str


Verdict = Done | Fail | Decision
DONE = Done()


@dataclass(frozen=True)
class Step:
    name: str
    check: Callable[[View], Verdict]
    fatal: bool = True
    """A fatal failure turns the route into cleanup; a non-fatal one is recorded for the next steps."""


@dataclass(frozen=True)
class Plan:
    """One decision: the new progress, what to do now, and what is worth logging about how it was reached."""

    progress: Progress
    decision: Decision
    notes: tuple[str, ...] = ()


# --- helpers -------------------------------------------------------------------------------------------------


def operand_keys(settings: Settings) -> tuple[str, ...]:
    """The labels paused first: NVIDIA's operand labels plus NODE_LABEL_FOR_GPU_POD_EVICTION."""
    extra = settings.eviction_label
    return OPERAND_LABELS + ((extra,) if extra and extra not in OPERAND_LABELS else ())


def _all_keys(settings: Settings) -> tuple[str, ...]:
    return operand_keys(settings) + (DRA_DRIVER_LABEL,)


def _set(labels: Mapping[str, str], why: str) -> SetLabels:
    return SetLabels(tuple(sorted(labels.items())), why)


def _names(pods: Sequence[PodFacts], limit: int = 8) -> str:
    shown = ", ".join(pod.key for pod in pods[:limit])
    return shown + (f" and {len(pods) - limit} more" if len(pods) > limit else "")


def _wait(view: View, reason: str) -> Wait:
    return Wait(reason, view.settings.poll_interval)


# --- steps ---------------------------------------------------------------------------------------------------


def _label_pre_installed(view: View) -> Verdict:
    if view.labels.get(DRIVER_LABEL) == PRE_INSTALLED:
        return DONE
    return _set({DRIVER_LABEL: PRE_INSTALLED}, "the host has its own driver; turn the containerized driver off")


def _hold(view: View) -> Verdict:
    remaining = view.settings.host_driver_delay - view.elapsed()
    if remaining <= 0:
        return DONE
    return Wait(f"waiting {remaining:.0f} s for the driver pod to stop being scheduled here", remaining)


def _pause(keys: Callable[[Settings], tuple[str, ...]], why: str) -> Callable[[View], Verdict]:
    def check(view: View) -> Verdict:
        wanted = paused_values(view.labels, keys(view.settings))
        return _set(wanted, why) if wanted else DONE

    return check


def _wait_gone(keys: Callable[[Settings], tuple[str, ...]], what: str) -> Callable[[View], Verdict]:
    def check(view: View) -> Verdict:
        settings = view.settings
        pods = stale_operand_pods(view.snapshot.pods, view.labels, keys(settings), settings.operator_namespace)
        if not pods:
            return DONE
        if view.elapsed() > view.settings.operand_timeout:
            return Fail(f"{what} still on the node after {view.settings.operand_timeout:g} s: {_names(pods)}")
        return _wait(view, f"waiting for {len(pods)} {what} to terminate: {_names(pods)}")

    return check


def _dra_key(settings: Settings) -> tuple[str, ...]:
    return (DRA_DRIVER_LABEL,)


def _cordon_for_eviction(view: View) -> Verdict:
    if not view.eviction_enabled or view.node.unschedulable:
        return DONE
    return Cordon()


def _evict(view: View, pods: list[PodFacts], *, gpu: bool, what: str) -> Verdict:
    """Evict `pods` one at a time and wait until they are gone, within DRAIN_TIMEOUT_SECONDS."""
    if not pods:
        return DONE
    refused = refusals(pods, view.settings.drain, gpu=gpu)
    if refused:
        return Fail(f"cannot evict every {what} pod: " + "; ".join(refused))
    progress, now = view.progress, view.snapshot.now
    blocked = [pod for pod in pods if pod.key in progress.blocked and not pod.terminating]
    timeout = view.settings.drain.timeout
    if timeout and view.elapsed() > timeout:
        why = "; ".join(f"{pod.key}: {progress.refusals.get(pod.key, '')}" for pod in blocked)
        return Fail(
            f"{what} pods still on the node after {timeout:g} s (DRAIN_TIMEOUT_SECONDS): {_names(pods)}"
            + (f"; evictions refused: {why}" if why else "")
        )
    retry = view.settings.poll_interval
    for pod in pods:
        if not pod.terminating and now - progress.blocked.get(pod.key, now - retry) >= retry:
            return Evict(pod.namespace, pod.name, what)
    if blocked:
        return _wait(view, "evictions refused, retrying: " + "; ".join(
            f"{pod.key}: {progress.refusals.get(pod.key, '')}" for pod in blocked))
    return _wait(view, f"waiting for {len(pods)} {what} pod(s) to terminate: {_names(pods)}")


def _evict_gpu_pods(view: View) -> Verdict:
    if not view.eviction_enabled:
        return DONE
    return _evict(view, gpu_pods(view.snapshot.pods), gpu=True, what="GPU")


def _drain(view: View) -> Verdict:
    if not view.node.unschedulable:
        return Cordon()
    return _evict(view, drain_pods(view.snapshot.pods, view.settings.drain), gpu=False, what="drained")


def _switched_off(view: View) -> str:
    return "disabled by the upgrade policy" if view.progress.upgrade_policy else "ENABLE_AUTO_DRAIN is off"


def _drain_after(failed_step: str, consequence: str) -> Callable[[View], Verdict]:
    """Drain when `failed_step` recorded an error and auto-drain is on; fail with that error otherwise."""

    def check(view: View) -> Verdict:
        error = view.progress.errors.get(failed_step)
        if error is None:
            return DONE
        if not view.auto_drain:
            return Fail(f"{error}; {consequence} (auto drain: {_switched_off(view)})")
        return _drain(view)

    return check


def _unload_driver(view: View) -> Verdict:
    loaded = [module for module in DRIVER_MODULES if module in view.snapshot.host.modules]
    return UnloadModule(loaded[0]) if loaded else DONE


def _unload_again(view: View) -> Verdict:
    return _unload_driver(view) if "unload-driver" in view.progress.errors else DONE


def _unmount_driver_root(view: View) -> Verdict:
    mounts = view.snapshot.host.driver_mounts
    return Unmount(mounts[0]) if mounts else DONE


def _remove_pid_file(view: View) -> Verdict:
    return RemoveFile(PID_FILE) if view.snapshot.host.pid_file else DONE


def _unload_nouveau(view: View) -> Verdict:
    return UnloadModule("nouveau") if "nouveau" in view.snapshot.host.modules else DONE


def _unbind_vfio(view: View) -> Verdict:
    bound = view.snapshot.host.vfio_bound
    return UnbindVfio(bound) if bound else DONE


def _wait_mofed(view: View) -> Verdict:
    host = view.snapshot.host
    if not (view.settings.gpu_direct_rdma and host.mellanox) or host.mofed_ready:
        return DONE
    source = "mlx5_core to be loaded (host MOFED)" if view.settings.use_host_mofed else (
        "/run/mellanox/drivers/.driver-ready (the MOFED driver pod)")
    return _wait(view, f"GPUDirect RDMA is on: waiting for {source}")


def _uncordon(view: View) -> Verdict:
    return Uncordon() if CORDONED_ANNOTATION in view.node.annotations else DONE


def _restore(view: View) -> Verdict:
    wanted = restored_values(view.labels, _all_keys(view.settings))
    return _set(wanted, "restore the operands") if wanted else DONE


_PAUSE_OPERANDS = Step("pause-operands", _pause(operand_keys, "pause the operands"))
_WAIT_OPERANDS = Step("wait-operands", _wait_gone(operand_keys, "operand pods"))
_PAUSE_DRA = Step("pause-dra-driver", _pause(_dra_key, "pause the DRA kubelet plugin"))
_WAIT_DRA = Step("wait-dra-driver", _wait_gone(_dra_key, "DRA kubelet plugin pods"))
_UNMOUNT = Step("unmount-driver-root", _unmount_driver_root)
_REMOVE_PID = Step("remove-pid-file", _remove_pid_file)
_UNBIND_VFIO = Step("unbind-vfio", _unbind_vfio, fatal=False)
_WAIT_MOFED = Step("wait-mofed", _wait_mofed)
_UNCORDON = Step("uncordon", _uncordon)
_RESTORE = Step("restore-labels", _restore)
_UNLOAD_NOUVEAU = Step("unload-nouveau", _unload_nouveau)

ROUTES: dict[Route, tuple[Step, ...]] = {
    Route.HOST_DRIVER: (
        Step("label-pre-installed", _label_pre_installed), _UNCORDON, _RESTORE, Step("hold", _hold),
    ),
    Route.FRESH: (
        _PAUSE_DRA, _WAIT_DRA, _UNMOUNT, _REMOVE_PID, _UNLOAD_NOUVEAU, _UNBIND_VFIO, _WAIT_MOFED, _UNCORDON, _RESTORE,
    ),
    Route.KEEP: (_PAUSE_OPERANDS, _WAIT_OPERANDS, _PAUSE_DRA, _WAIT_DRA, _UNMOUNT, _REMOVE_PID, _UNCORDON, _RESTORE),
    Route.UPGRADE: (
        _PAUSE_OPERANDS,
        _WAIT_OPERANDS,
        Step("cordon", _cordon_for_eviction),
        Step("evict-gpu-pods", _evict_gpu_pods, fatal=False),
        Step("drain-after-eviction", _drain_after("evict-gpu-pods", "cannot proceed until the GPU pods are gone")),
        _PAUSE_DRA,
        _WAIT_DRA,
        Step("unload-driver", _unload_driver, fatal=False),
        Step("drain-for-unload", _drain_after("unload-driver", "the driver is still in use")),
        Step("unload-driver-again", _unload_again),
        _UNMOUNT,
        _REMOVE_PID,
        _UNBIND_VFIO,
        _WAIT_MOFED,
        _UNCORDON,
        _RESTORE,
        _UNLOAD_NOUVEAU,
    ),
    Route.CLEANUP: (Step("cleanup-uncordon", _uncordon, fatal=False), Step("cleanup-restore", _restore, fatal=False)),
}

_FINISHED: dict[Route, tuple[int, str]] = {
    Route.HOST_DRIVER: (1, "the host has its own NVIDIA driver: the containerized driver is off on this node "
                          f"({DRIVER_LABEL}={PRE_INSTALLED})"),
    Route.FRESH: (0, "no NVIDIA driver was loaded: the node is ready for the driver install"),
    Route.KEEP: (0, "the loaded driver has the desired config digest: kept it, no GPU workload was disturbed"),
    Route.UPGRADE: (0, "the old driver is unloaded: the node is ready for the driver install"),
}


# --- the machine ---------------------------------------------------------------------------------------------


def classify(settings: Settings, snapshot: Snapshot) -> tuple[Route, str]:
    """The route the first snapshot calls for, and why."""
    host = snapshot.host
    if host.host_driver:
        return Route.HOST_DRIVER, f"NVIDIA driver {host.host_driver} is pre-installed on the host"
    if not host.driver_loaded:
        return Route.FRESH, "no NVIDIA driver is loaded (fresh boot or install): nothing to evict"
    if settings.force_reinstall:
        return Route.UPGRADE, "FORCE_REINSTALL is set: reinstalling the loaded driver"
    if settings.desired_digest and host.loaded_digest == settings.desired_digest:
        return Route.KEEP, "the loaded driver has the desired config digest"
    if not settings.desired_digest:
        return Route.UPGRADE, "DRIVER_CONFIG_DIGEST is not set: assuming the config changed"
    loaded = host.loaded_digest or "none recorded"
    return Route.UPGRADE, f"the loaded driver's config digest ({loaded}) is not the desired one"


def _fail(progress: Progress, step: Step, reason: str) -> tuple[Progress, str]:
    """Record a failure of `step`: go on when it is not fatal (or when cleaning up), else switch to cleanup."""
    if not step.fatal or progress.route is Route.CLEANUP:
        errors = {**progress.errors, step.name: reason}
        return replace(progress, errors=errors, step=progress.step + 1), f"{step.name}: {reason}"
    cleanup = replace(progress, route=Route.CLEANUP, step=0, failure=f"{step.name}: {reason}")
    return cleanup, f"{step.name} failed: {reason}; restoring the node before exiting"


def _finish(progress: Progress) -> Exit:
    if progress.route is Route.CLEANUP:
        problems = [f"{name}: {error}" for name, error in progress.errors.items() if name.startswith("cleanup-")]
        return Exit(1, progress.failure + (f" (cleanup also failed: {'; '.join(problems)})" if problems else ""))
    assert progress.route is not None
    return Exit(*_FINISHED[progress.route])


def decide(settings: Settings, progress: Progress, snapshot: Snapshot) -> Plan:
    """The next thing to do, given what was done and what the node looks like now."""
    notes: list[str] = []
    if progress.route is None:
        route, why = classify(settings, snapshot)
        policy = snapshot.node.annotations.get(UPGRADE_ENABLED_ANNOTATION) == "true"
        progress = replace(progress, route=route, step=0, upgrade_policy=policy)
        present = [f"{key}={snapshot.node.labels[key]}" for key in _all_keys(settings) if key in snapshot.node.labels]
        notes.append(f"operand labels: {', '.join(present) or 'none'}")
        notes.append(f"route {route.value}: {why}")
        if policy:
            notes.append(POLICY_NOTE)
    while True:
        assert progress.route is not None
        steps = ROUTES[progress.route]
        if progress.step >= len(steps):
            return Plan(progress, _finish(progress), tuple(notes))
        step = steps[progress.step]
        if step.name not in progress.started:
            progress = replace(progress, started={**progress.started, step.name: snapshot.now})
        verdict = step.check(View(settings, progress, snapshot, step.name))
        if isinstance(verdict, Done):
            progress = replace(progress, step=progress.step + 1)
        elif isinstance(verdict, Fail):
            progress, note = _fail(progress, step, verdict.reason)
            notes.append(note)
        else:
            return Plan(progress, verdict, tuple(notes))


def _current(progress: Progress) -> Step:
    assert progress.route is not None
    return ROUTES[progress.route][progress.step]


def failed(progress: Progress, reason: str) -> tuple[Progress, str]:
    """The action the current step asked for failed (after the I/O layer's retries)."""
    return _fail(progress, _current(progress), reason)


def blocked(progress: Progress, pod: str, now: float, reason: str) -> Progress:
    """The eviction of `pod` was refused for now (a disruption budget): retry it after the poll interval."""
    return replace(
        progress, blocked={**progress.blocked, pod: now}, refusals={**progress.refusals, pod: reason},
    )


def stop(progress: Progress, reason: str) -> Progress:
    """Give up (a signal, or the API server unreachable): restore the node and exit 1; cleanup itself goes on."""
    if progress.route is Route.CLEANUP:
        return progress
    return replace(progress, route=Route.CLEANUP, step=0, failure=reason)
