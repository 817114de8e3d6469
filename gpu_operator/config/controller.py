"""The `controller` section: the operator controller that labels GPU nodes and rolls driver upgrades.

`gpu-operator-agent operator` runs from the agents image as a Deployment (`gpu-operator`, NVIDIA's name) with
one active replica chosen by a Lease. It keeps NVIDIA's node labels on every GPU node NFD finds (so clusters
without our AKS pools, and nodes added outside them, get their operands) and carries out
`operator.driver.upgradePolicy` when `driver.version` changes. It needs the agents image: by default it runs
whenever one is configured (`agents.image` or `agents.build`); `enabled: false` turns it off, and `enabled:
true` without an image is an error naming both fixes.
"""

from __future__ import annotations

from pydantic import Field

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.kube import ObjectName, ResourceRequirements

__all__ = ["ControllerSpec"]


class ControllerSpec(ConfigModel):
    enabled: bool | None = Field(default=None, description="default: on whenever the agents image is configured")
    replicas: int = Field(default=2, ge=1, le=5, description="one leads (a Lease); the others stand by")
    resync_seconds: int = Field(default=300, ge=10, le=86400,
                                description="a full re-list on top of the watches (NVIDIA requeues every 2 min)")
    validation_timeout_seconds: int = Field(
        default=600, ge=0, description="how long a node's validator may take after its new driver (0: forever)")
    wait_for_driver_rollout: bool = Field(
        default=False, description="`pulumi up` waits until every GPU node runs the driver DaemonSet's template")
    rollout_timeout_seconds: int = Field(default=3600, ge=60, description="with wait_for_driver_rollout")
    resources: ResourceRequirements = ResourceRequirements(
        requests={"cpu": "100m", "memory": "96Mi"}, limits={"cpu": "500m", "memory": "256Mi"})
    priority_class_name: ObjectName = "system-node-critical"
