"""The transforms NVIDIA applies to every operand DaemonSet, in its order.

Upstream, each operand's manifest is a template that `preProcessDaemonSet` and a per-operand `Transform*`
function complete at reconcile time. Our operand modules build the template; :func:`finalize_daemonset` then
applies the shared part, step for step:

1. `daemonsets.updateStrategy` (the driver DaemonSet always stays `OnDelete`);
2. `daemonsets.priorityClassName`, 3. `daemonsets.tolerations` (replacing the template's; ours add the taints the
   GPU fault remediation may put on a node, so the operands return after a repair), 4. `podSecurityContext`;
5. `hostPaths.rootFS` and 6. `hostPaths.driverInstallDir` rewrites of the well-known volumes;
7. the operand's own `imagePullPolicy`, `imagePullSecrets`, `resources` (regular containers only), `args`, `env`,
   `hostNetwork`;
8. `daemonsets.labels`/`annotations`;
9. every `*validation*` init container gets the validator's image, pull policy, resources, `runAsUser: 0` and the
   env of its check (`validator.driver.env` for `driver-validation`, ...).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from gpu_operator.config.clusterpolicy.common import ImageFields
from gpu_operator.config.clusterpolicy.validator import ValidatorSpec
from gpu_operator.config.kube import EnvVar
from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import operand_image, pull_policy, pull_secrets
from gpu_operator.render.k8s import Object

__all__ = ["finalize_daemonset", "merge_env", "containers_of", "DEFAULT_ROOT_FS", "DEFAULT_DRIVER_INSTALL_DIR"]

DEFAULT_ROOT_FS = "/"
DEFAULT_DRIVER_INSTALL_DIR = "/run/nvidia/driver"
_PROTECTED_POD_LABELS = ("app", "app.kubernetes.io/part-of")


def containers_of(pod: Object) -> list[Object]:
    """Init containers then containers of a pod spec."""
    return [*pod.get("initContainers", []), *pod.get("containers", [])]


def merge_env(container: Object, variables: Iterable[EnvVar | Object]) -> None:
    """Set env vars by name: replace an existing value in place, append a new one (NVIDIA's setContainerEnv)."""
    variables = list(variables)
    if not variables:
        return
    current: list[Object] = container.setdefault("env", [])
    for variable in variables:
        item = variable.model_dump(exclude_none=True) if isinstance(variable, EnvVar) else dict(variable)
        item.setdefault("value", "")
        for index, existing in enumerate(current):
            if existing["name"] == item["name"]:
                current[index] = item
                break
        else:
            current.append(item)


def _update_strategy(ctx: RenderContext, ds: Object) -> None:
    spec = ds["spec"]
    if ds["metadata"]["name"].startswith("nvidia-driver-daemonset"):
        spec["updateStrategy"] = {"type": "OnDelete"}
        return
    settings = ctx.spec.daemonsets
    if settings.update_strategy == "OnDelete":
        spec["updateStrategy"] = {"type": "OnDelete"}
        return
    max_unavailable: int | str = settings.rolling_update.max_unavailable
    if isinstance(max_unavailable, str) and max_unavailable.isdigit():
        max_unavailable = int(max_unavailable)
    spec["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable}}


def _scheduling(ctx: RenderContext, pod: Object) -> None:
    settings = ctx.spec.daemonsets
    if settings.priority_class_name:
        pod["priorityClassName"] = settings.priority_class_name
    if settings.tolerations:
        pod["tolerations"] = [t.model_dump(by_alias=True, exclude_none=True) for t in settings.tolerations]
    for toleration in ctx.config.remediation.fault_taints():  # operands come back after a repair, to validate it
        if toleration not in pod.setdefault("tolerations", []):
            pod["tolerations"].append(toleration)
    if settings.pod_security_context is not None:
        pod["securityContext"] = settings.pod_security_context.model_dump(by_alias=True, exclude_none=True)


def _host_paths(ctx: RenderContext, pod: Object) -> None:
    paths = ctx.spec.host_paths
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    if paths.root_fs != DEFAULT_ROOT_FS and "host-root" in volumes:
        root = paths.root_fs.rstrip("/") or "/"
        volumes["host-root"]["hostPath"]["path"] = root
        if "host-dev-char" in volumes:
            volumes["host-dev-char"]["hostPath"]["path"] = f"{root}/dev/char"
        for container in containers_of(pod):
            merge_env(container, [{"name": "HOST_ROOT", "value": root}])
    if paths.driver_install_dir != DEFAULT_DRIVER_INSTALL_DIR and "driver-install-dir" in volumes:
        volumes["driver-install-dir"]["hostPath"]["path"] = paths.driver_install_dir
        for container in containers_of(pod):
            if container["name"] != "driver-validation":
                continue
            merge_env(container, [
                {"name": "DRIVER_INSTALL_DIR", "value": paths.driver_install_dir},
                {"name": "DRIVER_INSTALL_DIR_CTR_PATH", "value": paths.driver_install_dir},
            ])
            for volume_mount in container.get("volumeMounts", []):
                if volume_mount["name"] == "driver-install-dir":
                    volume_mount["mountPath"] = paths.driver_install_dir


#: Containers whose pull policy comes from a section of their own (`*.driverManager`), even when they share the
#: operand's image (the vfio manager's default image is the driver manager's).
_OWN_PULL_POLICY = frozenset({"k8s-driver-manager"})


def _add_pull_secrets(pod: Object, secrets: Iterable[str]) -> None:
    current = pod.setdefault("imagePullSecrets", [])
    for secret in secrets:
        if {"name": secret} not in current:
            current.append({"name": secret})
    if not current:
        del pod["imagePullSecrets"]


def _operand(ctx: RenderContext, pod: Object, section: str, spec: ImageFields, main: str) -> None:
    image = operand_image(ctx, section, spec)
    policy = pull_policy(ctx, section, spec)
    for container in containers_of(pod):
        if container.get("image") == image and container["name"] not in _OWN_PULL_POLICY:
            container["imagePullPolicy"] = policy
    _add_pull_secrets(pod, pull_secrets(ctx, section, spec))
    resources = getattr(spec, "resources", None)
    if resources is not None:
        for container in pod["containers"]:
            container["resources"] = resources.model_dump(exclude_none=True)
    main_container = next(c for c in pod["containers"] if c["name"] == main)
    args = getattr(spec, "args", ())
    if args:
        main_container["args"] = list(args)
    merge_env(main_container, getattr(spec, "env", ()))
    if getattr(spec, "host_network", False):
        pod["hostNetwork"] = True
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"


def _common_labels(ctx: RenderContext, ds: Object) -> None:
    settings = ctx.spec.daemonsets
    template_meta = ds["spec"]["template"]["metadata"]
    for key, value in settings.labels.items():
        ds["metadata"].setdefault("labels", {})[key] = value
        if key not in _PROTECTED_POD_LABELS:
            template_meta.setdefault("labels", {})[key] = value
    for key, value in settings.annotations.items():
        ds["metadata"].setdefault("annotations", {})[key] = value
        template_meta.setdefault("annotations", {})[key] = value


def _check_env(validator: ValidatorSpec) -> dict[str, tuple[EnvVar, ...]]:
    """Init container name → the env of the validation it runs."""
    return {
        "driver-validation": validator.driver.env,
        "toolkit-validation": validator.toolkit.env,
        "cuda-validation": validator.cuda.env,
        "plugin-validation": validator.plugin.env,
        "vfio-pci-validation": validator.vfio_pci.env,
        "vgpu-manager-validation": validator.vgpu_manager.env,
        "vgpu-devices-validation": validator.vgpu_devices.env,
    }


def _validation_containers(ctx: RenderContext, pod: Object) -> None:
    validator = ctx.spec.validator
    check_env = _check_env(validator)
    image = operand_image(ctx, "validator", validator)
    policy = pull_policy(ctx, "validator", validator)
    found = False
    for container in pod.get("initContainers", []):
        if "validation" not in container["name"]:
            continue
        found = True
        container["image"] = image
        container["imagePullPolicy"] = policy
        if validator.resources is not None:
            container["resources"] = validator.resources.model_dump(exclude_none=True)
        container.setdefault("securityContext", {})["runAsUser"] = 0
        merge_env(container, check_env.get(container["name"], ()))
    if found:
        _add_pull_secrets(pod, pull_secrets(ctx, "validator", validator))


def finalize_daemonset(
    ctx: RenderContext,
    ds: Object,
    *,
    section: str | None,
    spec: ImageFields | None,
    main_container: str,
) -> Object:
    """Apply the shared DaemonSet transforms in place and return the DaemonSet.

    `section`/`spec` name the ClusterPolicy section whose image/env/resources settings apply (None for operands
    that have none of their own); `main_container` is the container that receives `args` and `env`.
    """
    pod: Any = ds["spec"]["template"]["spec"]
    _update_strategy(ctx, ds)
    _scheduling(ctx, pod)
    _host_paths(ctx, pod)
    if section is not None and spec is not None:
        _operand(ctx, pod, section, spec, main_container)
    _common_labels(ctx, ds)
    _validation_containers(ctx, pod)
    return ds
