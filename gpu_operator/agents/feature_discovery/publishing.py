"""Sinks that talk to the API server: the NodeFeature output, and the GPU inventory beside any output.

`build_sink` turns the settings into the agent's sink. The file and stdout outputs come from
:data:`.sinks.SINK_FACTORIES`; the NodeFeature API output (GFD's default) needs the node name, the namespace and
API access, so it is built here, with its owners resolved from `POD_NAME`. With `--publish-gpu-devices`
(`GFD_PUBLISH_GPU_DEVICES`), whichever output is chosen is wrapped so that every labelling pass also reconciles the
node's `GpuDevice` objects with NVML's inventory (:mod:`.gpu_devices`); inventory failures are logged and retried
on the next pass, never fatal to the labels.

A NodeFeature that cannot be written is fatal, as in GFD (the pod restarts): it is raised as `PublishFailed`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from gpu_operator.agents.feature_discovery.gpu_devices import GpuDevicePublisher
from gpu_operator.agents.feature_discovery.node_feature import NodeFeatureSink, resolve_owner_references
from gpu_operator.agents.feature_discovery.settings import Settings
from gpu_operator.agents.feature_discovery.sinks import (
    NODE_FEATURE_API,
    SINK_FACTORIES,
    LabelSink,
    SinkUnavailable,
    sink_kind,
)
from gpu_operator.agents.kube import KubeClient, KubeConfigError, KubeError
from gpu_operator.agents.nvml import Nvml, NvmlError

__all__ = ["ApiNodeFeatureSink", "ClientFactory", "InventorySink", "PublishFailed", "api_client", "build_sink"]

_log = logging.getLogger(__name__)

ClientFactory = Callable[[Settings], KubeClient]


class PublishFailed(Exception):
    """The labels could not be published through the API server."""


class ApiNodeFeatureSink:
    """The NodeFeature sink with API failures turned into `PublishFailed`."""

    def __init__(self, sink: NodeFeatureSink) -> None:
        self._sink = sink

    def publish(self, labels: Mapping[str, str]) -> None:
        try:
            self._sink.publish(labels)
        except KubeError as error:
            raise PublishFailed(f"failed to publish the NodeFeature object: {error}") from error

    def withdraw(self) -> None:
        self._sink.withdraw()


class InventorySink:
    """Another sink, plus the node's `GpuDevice` objects reconciled on every publish."""

    def __init__(self, labels: LabelSink, inventory: GpuDevicePublisher, nvml: Nvml) -> None:
        self._labels = labels
        self._inventory = inventory
        self._nvml = nvml

    def publish(self, labels: Mapping[str, str]) -> None:
        self._labels.publish(labels)
        try:
            self._inventory.publish(self._nvml.system(), self._nvml.devices())
        except (KubeError, NvmlError) as error:
            _log.warning("could not publish the GpuDevice inventory: %s", error)

    def withdraw(self) -> None:
        self._labels.withdraw()


def api_client(settings: Settings) -> KubeClient:
    """The API client for the settings' kubeconfig, else the pod's service account; SinkUnavailable without one."""
    try:
        return KubeClient.from_environment(kubeconfig=settings.kubeconfig or None)
    except KubeConfigError as error:
        raise SinkUnavailable(
            f"no Kubernetes API access for the NodeFeature API or the GPU inventory ({error}); "
            "set --use-node-feature-api=false (GFD_USE_NODE_FEATURE_API=false) to write the features.d file"
        ) from error


def _node_feature_sink(settings: Settings, client: KubeClient) -> LabelSink:
    if not settings.node_name:
        raise SinkUnavailable("required flag node-name not set (NODE_NAME) for the NodeFeature API")
    if not settings.namespace:
        raise SinkUnavailable("required flag namespace not set (NAMESPACE) for the NodeFeature API")
    owners = resolve_owner_references(client, settings.namespace, settings.pod_name)
    return ApiNodeFeatureSink(NodeFeatureSink(client, settings.namespace, settings.node_name, owners))


def build_sink(settings: Settings, nvml: Nvml, make_client: ClientFactory = api_client) -> LabelSink:
    """The sink the settings select, with the GPU inventory around it when asked for."""
    kind = sink_kind(settings.output_file, settings.use_node_feature_api)
    needs_api = kind == NODE_FEATURE_API or settings.publish_gpu_devices
    client = make_client(settings) if needs_api else None
    if kind == NODE_FEATURE_API:
        assert client is not None
        sink = _node_feature_sink(settings, client)
    else:
        sink = SINK_FACTORIES[kind](settings.output_file)
    if not settings.publish_gpu_devices:
        return sink
    assert client is not None
    if not settings.node_name:
        raise SinkUnavailable("required flag node-name not set (NODE_NAME) for --publish-gpu-devices")
    return InventorySink(sink, GpuDevicePublisher(client, settings.node_name), nvml)
