"""The driver check: is an NVIDIA driver working on this node, and where is it?

1. The host's driver first: an executable `nvidia-smi` in one of the usual places under the host root, and
   NVML answering from the host's library (one try). On WSL2 the driver is Windows' and is assumed to work.
2. Else the containerized driver. When a driver DaemonSet exists in the operator namespace (label
   `app.kubernetes.io/component=nvidia-driver`; NVIDIA also requires a ClusterPolicy or NVIDIADriver owner,
   which our stacks do not create), first wait for the driver container's `.driver-ctr-ready`. Then NVML must
   answer from the library under `DRIVER_INSTALL_DIR_CTR_PATH` - once, or until it does with `WITH_WAIT`. The
   modules the driver container says it enabled (GDRCopy, GDS, GPUDirect RDMA) are then checked too.
3. The `/dev/char` links for the NVIDIA devices are created (:mod:`.dev_char`), then `driver-ready` is written
   with the driver's location (:mod:`.driver_root`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpu_operator.agents.kube import DAEMON_SETS, KubeError
from gpu_operator.agents.validator.context import Context
from gpu_operator.agents.validator.dev_char import ISSUE_HINT, DevCharSetup
from gpu_operator.agents.validator.driver_probe import DriverProbe, probe_driver
from gpu_operator.agents.validator.driver_root import (
    DriverInfo,
    container_driver_info,
    driver_ready_text,
    find_host_nvidia_smi,
    host_driver_info,
    is_wsl,
)
from gpu_operator.agents.validator.errors import ValidationFailed
from gpu_operator.agents.validator.gpudirect import MODULE_CHECKS
from gpu_operator.agents.validator.status import DRIVER_CONTAINER_READY, DRIVER_READY

__all__ = ["DRIVER_DAEMONSET_LABEL", "DRIVER_FEATURES", "ValidatedDriver", "driver", "validate_driver"]

_log = logging.getLogger(__name__)

DRIVER_DAEMONSET_LABEL = {"app.kubernetes.io/component": "nvidia-driver"}
#: Flags in `.driver-ctr-ready` -> the component check each one enables.
DRIVER_FEATURES: Mapping[str, str] = {
    "GDRCOPY_ENABLED": "gdrcopy",
    "GDS_ENABLED": "nvidia-fs",
    "GPU_DIRECT_RDMA_ENABLED": "nvidia-peermem",
}


@dataclass(frozen=True, slots=True)
class ValidatedDriver:
    """A working driver: where it is, what NVML said (None on WSL) and whether `/dev/char` links apply."""

    info: DriverInfo
    probe: DriverProbe | None
    link_devices: bool = True


def _host_driver(ctx: Context) -> ValidatedDriver | None:
    settings, host = ctx.settings, ctx.paths.host_root
    _log.info("attempting to validate a pre-installed driver on the host")
    if is_wsl(host):
        _log.info("WSL2 system detected, assuming the driver is pre-installed")
        return ValidatedDriver(host_driver_info(settings.host_root), None, link_devices=False)
    if find_host_nvidia_smi(host) is None:
        _log.info("no pre-installed driver detected on the host: no executable nvidia-smi")
        return None
    try:
        probe = probe_driver(
            settings.nvml, host, initialise_gpus=not settings.driver_validation_skip_gpu_init, environ=ctx.environ
        )
    except ValidationFailed as failure:
        _log.info("no working pre-installed driver on the host: %s", failure)
        return None
    _log.info("detected a pre-installed driver on the host")
    return ValidatedDriver(host_driver_info(settings.host_root), probe)


def _managed_by_operator(ctx: Context) -> bool:
    try:
        found = ctx.kube().list(DAEMON_SETS, ctx.settings.namespace or None, labels=DRIVER_DAEMONSET_LABEL)
    except KubeError as error:
        raise ValidationFailed(f"error checking if the driver is managed by the GPU operator: {error}") from error
    return bool(found)


def _driver_container_flags(ctx: Context) -> dict[str, bool]:
    try:
        parsed = yaml.safe_load(ctx.status.read(DRIVER_CONTAINER_READY))
    except (OSError, yaml.YAMLError) as error:
        raise ValidationFailed(f"cannot read {DRIVER_CONTAINER_READY}: {error}") from error
    return {str(k): v for k, v in parsed.items() if isinstance(v, bool)} if isinstance(parsed, dict) else {}


def _container_driver(ctx: Context) -> ValidatedDriver:
    settings = ctx.settings
    managed = _managed_by_operator(ctx)
    if managed:
        _log.info("the driver is not pre-installed on the host and is managed by the GPU operator")

        def container_ready() -> None:
            if not ctx.status.exists(DRIVER_CONTAINER_READY):
                raise ValidationFailed(f"{Path(settings.output_dir, DRIVER_CONTAINER_READY)} does not exist yet")

        ctx.retry.run(container_ready, "driver container is not ready")
    root = settings.driver_install_dir_ctr_path
    probe = ctx.retry.run(
        lambda: probe_driver(
            settings.nvml, root, initialise_gpus=not settings.driver_validation_skip_gpu_init, environ=ctx.environ
        ),
        "failed to validate the driver",
    )
    if managed:
        for flag, enabled in _driver_container_flags(ctx).items():
            if enabled and flag in DRIVER_FEATURES:
                _log.info("validating additional driver component: %s", DRIVER_FEATURES[flag])
                MODULE_CHECKS[DRIVER_FEATURES[flag]](ctx)
    info = container_driver_info(settings.host_root, settings.driver_install_dir, root)
    return ValidatedDriver(info, probe)


def validate_driver(ctx: Context) -> ValidatedDriver:
    """The host's driver if it works, else the containerized one (waited for with `WITH_WAIT`)."""
    return _host_driver(ctx) or _container_driver(ctx)


def _link_devices(ctx: Context, validated: ValidatedDriver) -> None:
    settings, paths, info = ctx.settings, ctx.paths, validated.info
    optional = {k: v for k, v in (("run", ctx.run_command), ("make_node", ctx.make_node)) if v is not None}
    setup = DevCharSetup(
        host_dev_char=paths.host_dev_char,
        proc=paths.proc,
        sys=paths.sys,
        driver_root_in_container=paths.host_root if info.is_host_driver else settings.driver_install_dir_ctr_path,
        dev_root_in_container=(
            settings.driver_install_dir_ctr_path
            if not info.is_host_driver and info.dev_root == info.driver_root
            else None
        ),
        **optional,  # type: ignore[arg-type]
    )
    try:
        setup.create(info, validated.probe.gpu_minors if validated.probe else None)
    except ValidationFailed as failure:
        raise ValidationFailed(f"{failure}\n\n{ISSUE_HINT}") from failure


def driver(ctx: Context) -> None:
    """Validate the driver, link its devices, and write `driver-ready`."""
    ctx.status.remove(DRIVER_READY)
    validated = validate_driver(ctx)
    if validated.link_devices and not ctx.settings.disable_dev_char_symlink_creation:
        _link_devices(ctx, validated)
    else:
        _log.info("skipping the creation of symlinks under /dev/char for the NVIDIA character devices")
    ctx.status.write(DRIVER_READY, driver_ready_text(validated.info))
