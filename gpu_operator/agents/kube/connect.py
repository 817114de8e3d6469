"""A lightkube `Client` that sends through the agents' one retry policy (:mod:`.transport`).

Every agent that talks to the API server gets its client here, typed (the controller, the driver manager) or
through :class:`~gpu_operator.agents.kube.client.KubeClient` (plain dicts): the TLS settings of the configuration
(its CA, its client certificate) go to the real transport, which :class:`.transport.RetryingTransport` wraps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx2
from lightkube import Client, SingleConfig
from lightkube.config.client_adapter import verify_cluster

from gpu_operator.agents.kube.transport import RetryingTransport, RetryPolicy, WriteGuard

__all__ = ["connect"]


def connect(config: SingleConfig, *, retry: RetryPolicy = RetryPolicy(), timeout: float = 30.0,
            field_manager: str | None = None, guard: WriteGuard | None = None,
            interrupt: threading.Event | None = None, user_agent: str | None = None,
            sleep: Callable[[float], None] | None = None) -> Client:
    """A client of the API server `config` names; see :class:`.transport.RetryingTransport` for the hooks."""
    tls = config.cluster.server.startswith("https")  # plain http (a local test server) needs no CA bundle loaded
    inner = httpx2.HTTPTransport(verify=verify_cluster(config.cluster, config.user, config.abs_file) if tls else False)
    transport = RetryingTransport(inner, retry, guard=guard, interrupt=interrupt, user_agent=user_agent,
                                  sleep=sleep)
    return Client(config, timeout=httpx2.Timeout(timeout), field_manager=field_manager, transport=transport)
