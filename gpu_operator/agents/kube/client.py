"""`KubeClient`: a `lightkube.Client` shaped for the agents - plain dicts in and out, our exceptions, retries.

The configuration is an explicit kubeconfig, else the first existing file in `$KUBECONFIG`, else the pod's
service account when `$KUBERNETES_SERVICE_HOST` says it runs in a cluster; lightkube reads each. Requests go
through the agents' one retry policy (:mod:`.transport`: throttling, server errors and lost connections are
retried with backoff up to a deadline); what still fails raises the exception of :mod:`.errors`. lightkube
reopens every watch the server ends; so that ours ends on time, it runs on a client of its own, closed just
before the server-side timeout.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import yaml
from lightkube import ALL_NS, Client, ConfigError, KubeConfig, SingleConfig
from lightkube.types import CascadeType, PatchType

from gpu_operator.agents.kube.connect import connect
from gpu_operator.agents.kube.errors import KubeConfigError, kube_error
from gpu_operator.agents.kube.resources import Resource, generic_model, status_model
from gpu_operator.agents.kube.transport import RetryPolicy

__all__ = ["SERVICE_ACCOUNT_DIR", "KubeClient", "PatchType", "RetryPolicy", "load_config"]

_log = logging.getLogger(__name__)
logging.getLogger("httpx2").setLevel(logging.WARNING)  # else one INFO line per request; failures are logged here
Object = dict[str, Any]
Selector = Mapping[str, Any]  # lightkube's: {"app": "x"}, {"app": ["x", "y"]} (in), {"spec.nodeName": "n1"}
T = TypeVar("T")
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_CONFIG_ERRORS = (ConfigError, OSError, KeyError, ValueError, TypeError, AssertionError, yaml.YAMLError)


def load_config(environ: Mapping[str, str] | None = None, kubeconfig: str | None = None,
                service_account_dir: str = SERVICE_ACCOUNT_DIR) -> SingleConfig:
    """An explicit kubeconfig, else `$KUBECONFIG`'s first existing file, else the in-cluster service account."""
    env = os.environ if environ is None else environ
    listed = [kubeconfig] if kubeconfig else [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    found = next((p for p in listed if Path(p).expanduser().is_file()), None)
    if listed and found is None:
        raise KubeConfigError(f"no kubeconfig file at {', '.join(listed)}")
    if found is None and not env.get("KUBERNETES_SERVICE_HOST"):
        raise KubeConfigError("not running in a cluster ($KUBERNETES_SERVICE_HOST is not set) and no kubeconfig")
    try:
        return (KubeConfig.from_file(found) if found else KubeConfig.from_service_account(service_account_dir)).get()
    except _CONFIG_ERRORS as error:
        raise KubeConfigError(f"unusable Kubernetes configuration: {error}") from error


def _namespace(resource: Resource, namespace: str | None, *, required: bool = True) -> str | None:
    if not resource.namespaced and namespace:
        raise ValueError(f"{resource.plural} are cluster-scoped; no namespace applies")
    if resource.namespaced and not namespace and required:
        raise ValueError(f"{resource.plural} are namespaced: a namespace is required")
    return namespace or (ALL_NS if resource.namespaced else None)


class KubeClient:
    """API calls against one cluster; `namespace` is the configuration's context namespace, if it names one."""

    def __init__(self, config: SingleConfig, *, retry: RetryPolicy = RetryPolicy(), timeout: float = 30.0,
                 sleep: Callable[[float], None] | None = None) -> None:
        self.config, self.namespace = config, config.context.namespace
        self._retry, self._timeout, self._sleep = retry, timeout, sleep
        self._client = self._new_client()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, kubeconfig: str | None = None) -> KubeClient:
        """The client for this process: kubeconfig (explicit or `$KUBECONFIG`), else the pod's service account."""
        return cls(load_config(environ, kubeconfig))

    def _new_client(self) -> Client:
        try:
            return connect(self.config, retry=self._retry, timeout=self._timeout, sleep=self._sleep)
        except _CONFIG_ERRORS as error:
            raise KubeConfigError(f"unusable configuration for {self.config.cluster.server}: {error}") from error

    def close(self) -> None:
        self._client.close()

    def _call(self, call: Callable[[], T]) -> T:
        """`call`, its failure (after the transport's retries) raised as the exception of :mod:`.errors`."""
        try:
            return call()
        except (httpx2.HTTPError, ConfigError) as error:
            raise kube_error(error) from error

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        """One object; NotFound when it does not exist."""
        ns = _namespace(resource, namespace)
        return dict(self._call(lambda: self._client.get(generic_model(resource), name, namespace=ns)))

    def list(self, resource: Resource, namespace: str | None = None, *, labels: Selector | None = None,
             fields: Selector | None = None, page_size: int = 500) -> list[Object]:
        """Every matching object, all pages read; `namespace` None lists across namespaces."""
        ns, model = _namespace(resource, namespace, required=False), generic_model(resource)
        return self._call(lambda: [dict(item) for item in self._client.list(
            model, namespace=ns, chunk_size=page_size, labels=labels, fields=fields)])

    def create(self, resource: Resource, body: Mapping[str, Any], namespace: str | None = None) -> Object:
        """Create an object (`metadata.generateName` lets the server pick the name); AlreadyExists on a clash."""
        ns, obj = _namespace(resource, namespace), generic_model(resource)(body)
        return dict(self._call(lambda: self._client.create(obj, namespace=ns)))

    def replace(self, resource: Resource, body: Mapping[str, Any], namespace: str | None = None) -> Object:
        """Replace an object (PUT); Conflict when `metadata.resourceVersion` is stale."""
        ns, obj = _namespace(resource, namespace), generic_model(resource)(body)
        return dict(self._call(lambda: self._client.replace(obj, namespace=ns)))

    def patch(self, resource: Resource, name: str, patch: Mapping[str, Any] | Sequence[Mapping[str, Any]],
              namespace: str | None = None, *, patch_type: PatchType = PatchType.MERGE,
              status: bool = False) -> Object:
        """Patch an object: a merge patch (a partial object) by default, or a JSON patch (a list of operations);
        `status` patches its `status` subresource (`nodes/status`), which RBAC grants apart."""
        ns = _namespace(resource, namespace)
        model = status_model(resource) if status else generic_model(resource)
        body = dict(patch) if isinstance(patch, Mapping) else [dict(op) for op in patch]
        return dict(self._call(lambda: self._client.patch(model, name, body, namespace=ns,
                                                                         patch_type=patch_type)))

    def delete(self, resource: Resource, name: str, namespace: str | None = None, *,
               grace_period_seconds: int | None = None, propagation_policy: str | None = None) -> None:
        """Delete an object; NotFound when it is already gone."""
        ns, model = _namespace(resource, namespace), generic_model(resource)
        cascade = CascadeType(propagation_policy) if propagation_policy else None
        self._call(lambda: self._client.delete(model, name, namespace=ns,
                                                               grace_period=grace_period_seconds, cascade=cascade))

    def watch(self, resource: Resource, namespace: str | None = None, *, labels: Selector | None = None,
              fields: Selector | None = None, resource_version: str | None = None,
              timeout_seconds: int = 300) -> Iterator[tuple[str, Object]]:
        """(event type, object) for each change after `resource_version` (without one, every current object first
        as ADDED) until the server ends the watch after `timeout_seconds`; one it ends sooner is reopened, except in
        the last half second. Raises Gone when the version is too old, ApiUnreachable when the watch breaks."""
        ns, client, ended = _namespace(resource, namespace, required=False), self._new_client(), threading.Event()
        timer = threading.Timer(max(0.0, timeout_seconds - 0.5), lambda: (ended.set(), client.close()))
        timer.daemon = True
        timer.start()
        try:
            for kind, obj in client.watch(generic_model(resource), namespace=ns, labels=labels, fields=fields,
                                          resource_version=resource_version, server_timeout=timeout_seconds):
                yield kind, dict(obj)
        except (httpx2.HTTPError, ConfigError) as error:
            if not ended.is_set():
                raise kube_error(error) from error
        except RuntimeError:  # "the client has been closed": lightkube reopening a watch whose time is up
            if not ended.is_set():
                raise
        finally:
            timer.cancel()
            client.close()
