"""state-container-toolkit: `nvidia-container-toolkit-daemonset`, which makes the node's runtime GPU-aware.

On each GPU node it installs the NVIDIA Container Toolkit under `toolkit.installDir`, writes the CDI specs to
`/var/run/cdi` and adds the `nvidia` runtime handlers to containerd, CRI-O or docker (see
:mod:`toolkit_runtime` for how the runtime's host files are reached). It starts after `driver-validation` has
found a working driver, so its entrypoint waits for `driver-ready` and exports the driver root paths it contains.
This operand is what makes the `nvidia` runtime class work, so it never runs under one itself.

The container is always NVIDIA's toolkit image (no agent replaces it), so the entrypoint ConfigMap is always
rendered; its script is ours (package data `scripts/toolkit-entrypoint.sh`). Upstream's Role also grants the
OpenShift SCC `privileged`; off OpenShift that grants nothing, so the Role keeps only the DaemonSet listing the
driver check needs. Like NVIDIA's operator, `toolkit.args` and `toolkit.hostNetwork` are not applied, and
`toolkit.resources` go to the toolkit container, not to the init container.
"""

from __future__ import annotations

from functools import cache

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import image_path
from gpu_operator.render.k8s import (
    Object,
    config_map,
    config_map_volume,
    daemonset,
    deploy_selector,
    env,
    env_field,
    host_path,
    mount,
    privileged,
    role,
    role_binding,
    rule,
    service_account,
)
from gpu_operator.render.operands.common import VALIDATIONS_DIR, read_script
from gpu_operator.render.operands.driver_validation import driver_validation_init
from gpu_operator.render.operands.toolkit_runtime import configure_runtime
from gpu_operator.render.transforms import DEFAULT_DRIVER_INSTALL_DIR, finalize_daemonset, merge_env

__all__ = ["STATE", "KEY", "NAME", "SERVICE_ACCOUNT", "ENTRYPOINT", "CONTAINER", "render", "entrypoint_script"]

STATE = "state-container-toolkit"
KEY = "container_toolkit"
NAME = "nvidia-container-toolkit-daemonset"
SERVICE_ACCOUNT = "nvidia-container-toolkit"
ENTRYPOINT = "nvidia-container-toolkit-entrypoint"
CONTAINER = "nvidia-container-toolkit-ctr"
_LABELS = {"app": NAME}


@cache
def entrypoint_script() -> str:
    return read_script("toolkit-entrypoint.sh")


def _cdi_env(ctx: RenderContext) -> list[Object]:
    """CDI injection instead of `nvidia` as default runtime; without CDI, CRI-O keeps the OCI prestart hook."""
    if ctx.cdi_enabled:
        variables = [
            env("CDI_ENABLED", True),
            env("NVIDIA_RUNTIME_SET_AS_DEFAULT", False),
            env("NVIDIA_CONTAINER_RUNTIME_MODE", "cdi"),
            env("CRIO_CONFIG_MODE", "config"),
        ]
        return variables + [env("ENABLE_NRI_PLUGIN", True)] if ctx.nri_plugin else variables
    return [env("CRIO_CONFIG_MODE", "hook")] if ctx.runtime == "crio" else []


def _toolkit_container(ctx: RenderContext) -> Object:
    spec = ctx.spec.toolkit
    container: Object = {
        "name": CONTAINER,
        "image": image_path(spec),
        "imagePullPolicy": spec.image_pull_policy,
        "command": ["/bin/sh", "-c"],
        "args": ["/bin/entrypoint.sh"],
        "env": [
            env("ROOT", spec.install_dir),
            env("NVIDIA_CONTAINER_RUNTIME_MODES_CDI_DEFAULT_KIND", "management.nvidia.com/gpu"),
            env("NVIDIA_VISIBLE_DEVICES", "void"),
            env("TOOLKIT_PID_FILE", "/run/nvidia/toolkit/toolkit.pid"),
            env_field("NRI_NAMESPACE", "metadata.namespace"),
        ],
        "securityContext": privileged(seLinuxOptions={"level": "s0"}),
        "volumeMounts": [
            mount(ENTRYPOINT, "/bin/entrypoint.sh", read_only=True, sub_path="entrypoint.sh"),
            mount("toolkit-root", "/run/nvidia/toolkit"),
            mount("run-nvidia-validations", VALIDATIONS_DIR),
            mount("toolkit-install-dir", spec.install_dir),
            mount("crio-hooks", "/usr/share/containers/oci/hooks.d"),
            mount("driver-install-dir", "/driver-root", propagation="HostToContainer"),
            mount("host-root", "/host", read_only=True, propagation="HostToContainer"),
            mount("cdi-root", "/var/run/cdi"),
        ],
    }
    merge_env(container, _cdi_env(ctx))
    merge_env(container, spec.env)
    if spec.resources is not None:
        container["resources"] = spec.resources.model_dump(exclude_none=True)
    return container


def _crio_hooks_dir(ctx: RenderContext) -> str:
    """Where CRI-O reads OCI hooks: the distribution default off OpenShift (NVIDIA's non-OpenShift rule)."""
    return "/usr/share/containers/oci/hooks.d" if ctx.runtime == "crio" else "/run/containers/oci/hooks.d"


def _volumes(ctx: RenderContext) -> list[Object]:
    return [
        config_map_volume(ENTRYPOINT, ENTRYPOINT, default_mode=0o700),
        host_path("toolkit-root", "/run/nvidia/toolkit", "DirectoryOrCreate"),
        host_path("run-nvidia-validations", VALIDATIONS_DIR, "DirectoryOrCreate"),
        host_path("driver-install-dir", DEFAULT_DRIVER_INSTALL_DIR, "DirectoryOrCreate"),
        host_path("host-root", "/"),
        host_path("toolkit-install-dir", ctx.spec.toolkit.install_dir),
        host_path("crio-hooks", _crio_hooks_dir(ctx)),
        host_path("host-dev-char", "/dev/char"),
        host_path("cdi-root", "/var/run/cdi", "DirectoryOrCreate"),
    ]


def _daemonset(ctx: RenderContext) -> Object:
    spec = ctx.spec.toolkit
    container = _toolkit_container(ctx)
    pod: Object = {
        "nodeSelector": deploy_selector("container-toolkit"),
        "serviceAccountName": SERVICE_ACCOUNT,
        "hostPID": True,
        "initContainers": [driver_validation_init(ctx)],
        "containers": [container],
        "volumes": _volumes(ctx),
    }
    if spec.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": secret} for secret in spec.image_pull_secrets]
    configure_runtime(ctx, pod, container)
    ds = daemonset(ctx, NAME, labels=_LABELS, pod_spec=pod)
    return finalize_daemonset(ctx, ds, section=None, spec=None, main_container=CONTAINER)


def _role(ctx: RenderContext) -> Object:
    # driver-validation lists the namespace's DaemonSets to find an operator-managed driver.
    return role(ctx, SERVICE_ACCOUNT, [rule(["apps"], ["daemonsets"], ["list"])])


def render(ctx: RenderContext) -> list[Object]:
    if not ctx.spec.toolkit.enabled:
        return []
    return [
        service_account(ctx, SERVICE_ACCOUNT),
        _role(ctx),
        role_binding(ctx, SERVICE_ACCOUNT),
        config_map(ctx, ENTRYPOINT, {"entrypoint.sh": entrypoint_script()}, labels=_LABELS),
        _daemonset(ctx),
    ]
