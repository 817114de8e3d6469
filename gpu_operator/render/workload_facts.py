"""What workloads and node pools need to know about a rendered stack.

* the extended resources pods request (`nvidia.com/gpu`, shared or MIG variants), from the device-plugin configs;
* the node labels operands select on (`nvidia.com/gpu.deploy.<operand>=true`), which node pools created without
  NVIDIA's labelling controller must carry;
* the runtime class GPU pods run under.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from gpu_operator.config import GpuStackConfig
from gpu_operator.render.context import RenderContext

__all__ = ["gpu_resource_names", "deploy_node_labels", "runtime_class_name", "GPU_PRESENT_LABEL"]

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
_DEPLOY_PREFIX = "nvidia.com/gpu.deploy."


def _shared_names(config: GpuStackConfig) -> list[str]:
    names: list[str] = []
    for device_config in (config.configs.device_plugin or {}).values():
        sharing = device_config.sharing
        for replicated in (sharing.time_slicing, sharing.mps) if sharing else ():
            if replicated is None:
                continue
            for resource in replicated.resources:
                renamed = resource.rename or (f"{resource.name}.shared" if replicated.rename_by_default else None)
                names.append(renamed if renamed and "/" in renamed else resource.name)
    return names


def _mig_names(config: GpuStackConfig) -> list[str]:
    custom = config.configs.mig_manager
    if custom is None:
        return []
    profiles = {
        profile
        for layouts in custom.mig_configs.values()
        for layout in layouts
        for profile, count in layout.mig_devices.items()
        if count > 0
    }
    return [f"nvidia.com/mig-{profile.replace('+', '.')}" for profile in sorted(profiles)]


def gpu_resource_names(config: GpuStackConfig) -> list[str]:
    """Extended resource names the device plugin advertises for this config (MIG profiles only when known)."""
    if not config.operator.device_plugin.enabled:
        return []
    names = ["nvidia.com/gpu", *_shared_names(config)]
    if config.operator.mig.strategy == "mixed":
        names += _mig_names(config)
    return list(dict.fromkeys(names))


def deploy_node_labels(objects: Iterable[dict[str, Any]]) -> dict[str, str]:
    """The `nvidia.com/gpu.deploy.*` labels the rendered DaemonSets select on, plus `nvidia.com/gpu.present`."""
    labels = {GPU_PRESENT_LABEL: "true"}
    for obj in objects:
        if obj["kind"] != "DaemonSet":
            continue
        selector = obj["spec"]["template"]["spec"].get("nodeSelector", {})
        labels.update({k: v for k, v in selector.items() if k.startswith(_DEPLOY_PREFIX)})
    return dict(sorted(labels.items()))


def runtime_class_name(config: GpuStackConfig) -> str | None:
    return RenderContext(config).runtime_class
