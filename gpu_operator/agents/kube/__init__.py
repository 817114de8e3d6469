"""The agents' access to the Kubernetes API: lightkube, behind a thin adapter the agents share.

`KubeClient.from_environment()` finds the API server (a kubeconfig, else the pod's service account) and offers
get / list / create / replace / patch / delete / watch of any :class:`Resource` (group, version, plural) on plain
dicts; `connect` gives a typed lightkube `Client` for agents that use lightkube's models. Both send through one
retry policy (:mod:`.transport`: throttling, server errors and lost connections retried with backoff up to a
deadline, writes guarded where a Lease fences them). Failures are the exceptions of :mod:`.errors`
(`NotFound`, `AlreadyExists`, `Conflict`, ...). `wait_for` watches one object until a
condition holds. HTTP, TLS, credentials, kubeconfig files and watch streams are lightkube's.
"""

from gpu_operator.agents.kube.client import SERVICE_ACCOUNT_DIR, KubeClient, PatchType, load_config
from gpu_operator.agents.kube.connect import connect
from gpu_operator.agents.kube.errors import (AlreadyExists, ApiError, ApiUnreachable, Conflict, Forbidden, Gone,
                                             KubeConfigError, KubeError, NotFound, NotLeader, ServerError,
                                             TooManyRequests, Unauthorized, kube_error)
from gpu_operator.agents.kube.resources import (CONFIG_MAPS, DAEMON_SETS, EVENTS, NAMESPACES, NODE_FEATURES, NODES,
                                                PODS, Resource)
from gpu_operator.agents.kube.transport import RetryingTransport, RetryPolicy
from gpu_operator.agents.kube.waiting import ObjectDeleted, WaitTimeout, wait_for

__all__ = ["CONFIG_MAPS", "DAEMON_SETS", "EVENTS", "NAMESPACES", "NODES", "NODE_FEATURES", "PODS",
           "SERVICE_ACCOUNT_DIR", "AlreadyExists", "ApiError", "ApiUnreachable", "Conflict", "Forbidden", "Gone",
           "KubeClient", "KubeConfigError", "KubeError", "NotFound", "NotLeader", "ObjectDeleted", "PatchType",
           "Resource", "RetryPolicy", "RetryingTransport", "ServerError", "TooManyRequests", "Unauthorized",
           "WaitTimeout", "connect", "kube_error", "load_config", "wait_for"]
