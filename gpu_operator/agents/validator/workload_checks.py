"""The cuda and plugin checks: the node's GPUs work for pods.

* cuda - with `WITH_WORKLOAD` (the default), run `nvidia-cuda-validator-*` (CUDA vectorAdd on all GPUs through
  the runtime) to success -> `cuda-ready`.
* plugin - wait (up to 150 s, watching the Node) until the device plugin's resources are allocatable, per
  `MIG_STRATEGY`; with `WITH_WORKLOAD` (the operator sets false) run `nvidia-device-plugin-validator-*` on one
  such resource to success -> `plugin-ready`.
"""

from __future__ import annotations

import logging

from gpu_operator.agents.kube import NODES, KubeError, WaitTimeout, wait_for
from gpu_operator.agents.validator.context import Context
from gpu_operator.agents.validator.errors import ValidationFailed
from gpu_operator.agents.validator.gpu_resources import allocatable, gpu_resource
from gpu_operator.agents.validator.pods import daemonset_template, run_to_completion
from gpu_operator.agents.validator.status import CUDA_READY, PLUGIN_READY
from gpu_operator.agents.validator.workload import WorkloadImage, cuda_pod, plugin_pod

__all__ = ["cuda", "plugin"]

_log = logging.getLogger(__name__)


def _image(ctx: Context) -> WorkloadImage:
    settings = ctx.settings
    if not settings.validator_image:
        raise ValidationFailed("VALIDATOR_IMAGE is not set: the workload pod needs the validator image")
    return WorkloadImage(
        settings.validator_image,
        settings.validator_image_pull_policy,
        settings.validator_image_pull_secrets,
        settings.validator_runtime_class,
    )


def cuda(ctx: Context) -> None:
    ctx.status.remove(CUDA_READY)
    if ctx.settings.with_workload:
        settings, client = ctx.settings, ctx.kube()
        tolerations, owners = daemonset_template(client, settings.namespace)
        pod = cuda_pod(settings.namespace, settings.node_name, _image(ctx), tolerations, owners)
        run_to_completion(client, pod, timeout=ctx.timing.pod_timeout, clock=ctx.clock)
    ctx.status.write(CUDA_READY)


def _advertised_resource(ctx: Context) -> str:
    settings = ctx.settings

    def advertised(node: dict) -> bool:
        found = gpu_resource(allocatable(node), settings.mig_strategy) is not None
        if not found:
            _log.info("GPU resources are not yet discovered by the node %s", settings.node_name)
        return found

    try:
        node = wait_for(
            ctx.kube(),
            NODES,
            settings.node_name,
            None,
            advertised,
            timeout=ctx.timing.resource_timeout,
            clock=ctx.clock,
        )
    except WaitTimeout as timeout:
        raise ValidationFailed("GPU resources are not discovered by the node") from timeout
    except KubeError as error:
        raise ValidationFailed(
            f"unable to fetch node {settings.node_name} to check for GPU resources: {error}"
        ) from error
    resource = gpu_resource(allocatable(node), settings.mig_strategy)
    assert resource is not None
    _log.info("node %s advertises %s", settings.node_name, resource)
    return resource


def plugin(ctx: Context) -> None:
    ctx.status.remove(PLUGIN_READY)
    resource = _advertised_resource(ctx)
    if ctx.settings.with_workload:
        settings, client = ctx.settings, ctx.kube()
        tolerations, owners = daemonset_template(client, settings.namespace)
        pod = plugin_pod(settings.namespace, settings.node_name, _image(ctx), resource, tolerations, owners)
        run_to_completion(client, pod, timeout=ctx.timing.pod_timeout, clock=ctx.clock)
    ctx.status.write(PLUGIN_READY)
