"""The agents' access to the Kubernetes API: lightkube, behind a thin adapter the agents share.

`KubeClient.from_environment()` finds the API server (a kubeconfig, else the pod's service account) and offers
get / list / create / replace / patch / delete / watch of any :class:`Resource` (group, version, plural) on plain
dicts. Failures are the exceptions of :mod:`.errors` (`NotFound`, `AlreadyExists`, `Conflict`, ...), after
retries with backoff for throttling, server errors and lost connections. `wait_for` watches one object until a
condition holds. HTTP, TLS, credentials, kubeconfig files and watch streams are lightkube's.
"""

from gpu_operator.agents.kube.client import SERVICE_ACCOUNT_DIR, KubeClient, PatchType, RetryPolicy, load_config
from gpu_operator.agents.kube.errors import (AlreadyExists, ApiError, ApiUnreachable, Conflict, Forbidden, Gone,
                                             KubeConfigError, KubeError, NotFound, ServerError, TooManyRequests,
                                             Unauthorized)
from gpu_operator.agents.kube.resources import (CONFIG_MAPS, DAEMON_SETS, EVENTS, NAMESPACES, NODE_FEATURES, NODES,
                                                PODS, Resource)
from gpu_operator.agents.kube.waiting import ObjectDeleted, WaitTimeout, wait_for

__all__ = ["CONFIG_MAPS", "DAEMON_SETS", "EVENTS", "NAMESPACES", "NODES", "NODE_FEATURES", "PODS",
           "SERVICE_ACCOUNT_DIR", "AlreadyExists", "ApiError", "ApiUnreachable", "Conflict", "Forbidden", "Gone",
           "KubeClient", "KubeConfigError", "KubeError", "NotFound", "ObjectDeleted", "PatchType", "Resource",
           "RetryPolicy", "ServerError", "TooManyRequests", "Unauthorized", "WaitTimeout", "load_config", "wait_for"]
