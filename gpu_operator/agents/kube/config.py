"""Where the API server is and how to authenticate: in-cluster service account, or a kubeconfig file.

Inside a pod, the API server is `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`, the credentials
are the service account token kubelet mounts (and rotates) under
`/var/run/secrets/kubernetes.io/serviceaccount/`, beside the cluster CA and the pod's namespace. Outside a
pod (development, tests), a kubeconfig file gives the same facts: the current context's cluster (server, CA,
TLS options) and user (a token, a token file, or a client certificate and key, each as a file or inline
base64 data). Plain `http://` servers are accepted, for test servers. Credential plugins (`exec`,
`auth-provider`) are not run: the agents authenticate as their own service account.

`load_config` picks: an explicit kubeconfig path, else `$KUBECONFIG` (the first listed file that exists), else
the in-cluster service account.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpu_operator.agents.kube.errors import KubeConfigError

__all__ = [
    "KUBECONFIG_ENV",
    "SERVICE_ACCOUNT_DIR",
    "ClusterConfig",
    "in_cluster_config",
    "kubeconfig_config",
    "load_config",
]

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
KUBECONFIG_ENV = "KUBECONFIG"
_HOST_ENV = "KUBERNETES_SERVICE_HOST"
_PORT_ENV = "KUBERNETES_SERVICE_PORT"


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """An API server and the credentials to use with it.

    `server` is a URL (`https://10.0.0.1:443`, or `http://127.0.0.1:8080` for a test server). Authentication is
    a bearer `token`, or a `token_file` re-read as it rotates, and/or a client certificate (`client_cert_*` and
    `client_key_*`, as a file path or PEM text). The server is verified against `ca_file`/`ca_data` (or the
    system's CAs) unless `insecure_skip_tls_verify`. `namespace` is the default namespace of the context (the
    pod's own namespace in a cluster), when known.
    """

    server: str
    token: str | None = None
    token_file: str | None = None
    ca_file: str | None = None
    ca_data: str | None = None
    client_cert_file: str | None = None
    client_cert_data: str | None = None
    client_key_file: str | None = None
    client_key_data: str | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    namespace: str | None = None


def _host_port(host: str, port: str) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def in_cluster_config(
    environ: Mapping[str, str], service_account_dir: str | Path = SERVICE_ACCOUNT_DIR
) -> ClusterConfig:
    """The pod's own API access; KubeConfigError when not running in a pod with a service account token."""
    host, port = environ.get(_HOST_ENV, ""), environ.get(_PORT_ENV, "")
    if not host or not port:
        raise KubeConfigError(f"not running in a cluster: {_HOST_ENV} and {_PORT_ENV} are not set")
    directory = Path(service_account_dir)
    token_file = directory / "token"
    if not token_file.is_file():
        raise KubeConfigError(f"not running in a cluster: no service account token at {token_file}")
    ca_file = directory / "ca.crt"
    return ClusterConfig(
        server=f"https://{_host_port(host, port)}",
        token_file=str(token_file),
        ca_file=str(ca_file) if ca_file.is_file() else None,
        namespace=_read_text(directory / "namespace") or None,
    )


def _named(entries: Any, name: str, kind: str, path: Path) -> Mapping[str, Any]:
    for entry in entries or ():
        if isinstance(entry, Mapping) and entry.get("name") == name:
            body = entry.get(kind)
            return body if isinstance(body, Mapping) else {}
    raise KubeConfigError(f"kubeconfig {path}: no {kind} named {name!r}")


def _decoded(value: Any, field: str, path: Path) -> str | None:
    if value is None:
        return None
    try:
        return base64.b64decode(str(value), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as error:
        raise KubeConfigError(f"kubeconfig {path}: {field} is not valid base64 PEM: {error}") from error


def _file(value: Any, base: Path) -> str | None:
    if not value:
        return None
    candidate = Path(str(value)).expanduser()
    return str(candidate if candidate.is_absolute() else base / candidate)


def _user_config(user: Mapping[str, Any], base: Path, path: Path) -> dict[str, Any]:
    for plugin in ("exec", "auth-provider"):
        if user.get(plugin):
            raise KubeConfigError(
                f"kubeconfig {path}: the user uses an {plugin} credential plugin, which is not supported"
            )
    if user.get("username") or user.get("password"):
        raise KubeConfigError(f"kubeconfig {path}: basic authentication is not supported")
    return {
        "token": user.get("token") or None,
        "token_file": _file(user.get("tokenFile"), base),
        "client_cert_file": _file(user.get("client-certificate"), base),
        "client_cert_data": _decoded(user.get("client-certificate-data"), "client-certificate-data", path),
        "client_key_file": _file(user.get("client-key"), base),
        "client_key_data": _decoded(user.get("client-key-data"), "client-key-data", path),
    }


def kubeconfig_config(path: str | Path, context: str | None = None) -> ClusterConfig:
    """The cluster and user of a kubeconfig context (the current one by default)."""
    file = Path(path).expanduser()
    try:
        document = yaml.safe_load(file.read_text())
    except OSError as error:
        raise KubeConfigError(f"cannot read kubeconfig {file}: {error}") from error
    except yaml.YAMLError as error:
        raise KubeConfigError(f"kubeconfig {file} is not valid YAML: {error}") from error
    if not isinstance(document, Mapping):
        raise KubeConfigError(f"kubeconfig {file} is empty or not a mapping")
    name = context or document.get("current-context")
    if not name:
        raise KubeConfigError(f"kubeconfig {file}: no current-context")
    chosen = _named(document.get("contexts"), name, "context", file)
    cluster = _named(document.get("clusters"), chosen.get("cluster"), "cluster", file)
    user = _named(document.get("users"), chosen.get("user"), "user", file) if chosen.get("user") else {}
    server = str(cluster.get("server") or "")
    if not server.startswith(("https://", "http://")):
        raise KubeConfigError(f"kubeconfig {file}: cluster {chosen.get('cluster')!r} has no http(s) server URL")
    base = file.parent
    return ClusterConfig(
        server=server.rstrip("/"),
        ca_file=_file(cluster.get("certificate-authority"), base),
        ca_data=_decoded(cluster.get("certificate-authority-data"), "certificate-authority-data", file),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
        tls_server_name=cluster.get("tls-server-name") or None,
        namespace=chosen.get("namespace") or None,
        **_user_config(user, base, file),
    )


def load_config(
    environ: Mapping[str, str] | None = None,
    kubeconfig: str | None = None,
    service_account_dir: str | Path = SERVICE_ACCOUNT_DIR,
) -> ClusterConfig:
    """An explicit kubeconfig, else `$KUBECONFIG`, else the in-cluster service account."""
    env = os.environ if environ is None else environ
    if kubeconfig:
        return kubeconfig_config(kubeconfig)
    listed = [entry for entry in env.get(KUBECONFIG_ENV, "").split(os.pathsep) if entry]
    existing = [entry for entry in listed if Path(entry).expanduser().is_file()]
    if existing:
        return kubeconfig_config(existing[0])
    if listed:
        raise KubeConfigError(f"none of the kubeconfig files in ${KUBECONFIG_ENV} exists: {', '.join(listed)}")
    return in_cluster_config(env, service_account_dir)
