"""The Kubernetes API client the agents share: standard library only, no generated code.

`KubeClient.from_environment()` finds the API server (the pod's service account in a cluster, a kubeconfig
elsewhere) and offers get / list / create / replace / patch / delete / watch for any resource type named by
a :class:`Resource` (group, version, plural). Objects are plain dicts. Failures are the exceptions of
:mod:`.errors` - `NotFound`, `AlreadyExists`, `Conflict`, `Forbidden`, ... - after retries with backoff for
throttling, server errors and lost connections. `wait_for` watches one object until a condition holds.
"""

from gpu_operator.agents.kube.client import KubeClient, ObjectList, PatchType
from gpu_operator.agents.kube.config import ClusterConfig, in_cluster_config, kubeconfig_config, load_config
from gpu_operator.agents.kube.errors import (
    AlreadyExists,
    ApiError,
    ApiUnreachable,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeConfigError,
    KubeError,
    MethodNotAllowed,
    NotFound,
    ServerError,
    ServerTimeout,
    TooManyRequests,
    Unauthorized,
)
from gpu_operator.agents.kube.resources import (
    CONFIG_MAPS,
    DAEMON_SETS,
    EVENTS,
    NAMESPACES,
    NODE_FEATURES,
    NODES,
    PODS,
    Resource,
    label_selector,
)
from gpu_operator.agents.kube.retry import RetryPolicy
from gpu_operator.agents.kube.waiting import ObjectDeleted, WaitTimeout, wait_for
from gpu_operator.agents.kube.watch import WatchEvent

__all__ = [
    "CONFIG_MAPS",
    "DAEMON_SETS",
    "EVENTS",
    "NAMESPACES",
    "NODES",
    "NODE_FEATURES",
    "PODS",
    "AlreadyExists",
    "ApiError",
    "ApiUnreachable",
    "BadRequest",
    "ClusterConfig",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeClient",
    "KubeConfigError",
    "KubeError",
    "MethodNotAllowed",
    "NotFound",
    "ObjectDeleted",
    "ObjectList",
    "PatchType",
    "Resource",
    "RetryPolicy",
    "ServerError",
    "ServerTimeout",
    "TooManyRequests",
    "Unauthorized",
    "WaitTimeout",
    "WatchEvent",
    "in_cluster_config",
    "kubeconfig_config",
    "label_selector",
    "load_config",
    "wait_for",
]
