"""Finding the API server: in-cluster service account, kubeconfig files, and which one wins."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from gpu_operator.agents.kube import (
    ClusterConfig,
    KubeConfigError,
    in_cluster_config,
    kubeconfig_config,
    load_config,
)
from gpu_operator.agents.kube.auth import TokenSource


@pytest.fixture
def service_account(tmp_path: Path) -> Path:
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text("sa-token\n")
    (directory / "ca.crt").write_text("PEM")
    (directory / "namespace").write_text("gpu-operator")
    return directory


def test_in_cluster(service_account: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    config = in_cluster_config(env, service_account)
    assert config == ClusterConfig(
        server="https://10.0.0.1:443",
        token_file=str(service_account / "token"),
        ca_file=str(service_account / "ca.crt"),
        namespace="gpu-operator",
    )


def test_in_cluster_ipv6_host_is_bracketed(service_account: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}
    assert in_cluster_config(env, service_account).server == "https://[fd00::1]:6443"


def test_not_in_a_cluster(tmp_path: Path, service_account: Path) -> None:
    with pytest.raises(KubeConfigError, match="KUBERNETES_SERVICE_HOST"):
        in_cluster_config({}, service_account)
    with pytest.raises(KubeConfigError, match="no service account token"):
        in_cluster_config({"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "1"}, tmp_path / "missing")


def _kubeconfig(tmp_path: Path, user: dict, cluster: dict | None = None, **context: str) -> Path:
    document = {
        "current-context": "dev",
        "clusters": [{"name": "c", "cluster": cluster or {"server": "https://k8s.example:6443/"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [
            {"name": "dev", "context": {"cluster": "c", "user": "u", **context}},
            {"name": "other", "context": {"cluster": "c", "user": "u", "namespace": "elsewhere"}},
        ],
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(document))
    return path


def test_kubeconfig_token_and_relative_files(tmp_path: Path) -> None:
    cluster = {"server": "https://k8s.example:6443/", "certificate-authority": "ca.pem", "tls-server-name": "api"}
    path = _kubeconfig(tmp_path, {"token": "abc"}, cluster, namespace="team")
    config = kubeconfig_config(path)
    assert config.server == "https://k8s.example:6443"
    assert config.token == "abc" and config.ca_file == str(tmp_path / "ca.pem")
    assert config.tls_server_name == "api" and config.namespace == "team"
    assert kubeconfig_config(path, context="other").namespace == "elsewhere"


def test_kubeconfig_inline_client_certificate(tmp_path: Path) -> None:
    encode = lambda text: base64.b64encode(text.encode()).decode()
    user = {"client-certificate-data": encode("CERT"), "client-key-data": encode("KEY")}
    cluster = {
        "server": "http://127.0.0.1:8080",
        "certificate-authority-data": encode("CA"),
        "insecure-skip-tls-verify": True,
    }
    config = kubeconfig_config(_kubeconfig(tmp_path, user, cluster))
    assert (config.client_cert_data, config.client_key_data, config.ca_data) == ("CERT", "KEY", "CA")
    assert config.insecure_skip_tls_verify is True and config.token is None


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ({"exec": {"command": "aws"}}, "exec credential plugin"),
        ({"auth-provider": {"name": "gcp"}}, "auth-provider credential plugin"),
        ({"username": "a", "password": "b"}, "basic authentication"),
        ({"client-certificate-data": "not base64!"}, "not valid base64"),
    ],
)
def test_unsupported_kubeconfig_users(tmp_path: Path, user: dict, message: str) -> None:
    with pytest.raises(KubeConfigError, match=message):
        kubeconfig_config(_kubeconfig(tmp_path, user))


def test_broken_kubeconfigs(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="cannot read kubeconfig"):
        kubeconfig_config(tmp_path / "absent")
    (tmp_path / "empty").write_text("")
    with pytest.raises(KubeConfigError, match="empty"):
        kubeconfig_config(tmp_path / "empty")
    with pytest.raises(KubeConfigError, match="no context named 'nope'"):
        kubeconfig_config(_kubeconfig(tmp_path, {}), context="nope")
    with pytest.raises(KubeConfigError, match="no http"):
        kubeconfig_config(_kubeconfig(tmp_path, {}, {"server": "k8s.example:6443"}))


def test_load_order(tmp_path: Path, service_account: Path) -> None:
    explicit = _kubeconfig(tmp_path, {"token": "explicit"})
    cluster_env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert load_config(cluster_env, str(explicit), service_account).token == "explicit"
    listed = {**cluster_env, "KUBECONFIG": f"{tmp_path / 'missing'}:{explicit}"}
    assert load_config(listed, None, service_account).token == "explicit"
    assert load_config(cluster_env, None, service_account).server == "https://10.0.0.1:443"
    with pytest.raises(KubeConfigError, match="none of the kubeconfig files"):
        load_config({"KUBECONFIG": str(tmp_path / "missing")}, None, service_account)


def test_token_file_is_reread_after_the_refresh_interval(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first\n")
    now = [0.0]
    source = TokenSource(token_file=str(token_file), refresh_seconds=60, clock=lambda: now[0])
    assert source.token() == "first"
    token_file.write_text("second\n")
    now[0] = 59.0
    assert source.token() == "first"
    now[0] = 60.0
    assert source.token() == "second"
    token_file.unlink()
    now[0] = 200.0
    assert source.token() == "second"
    assert TokenSource(token="fixed").token() == "fixed"
    with pytest.raises(KubeConfigError, match="cannot read the token file"):
        TokenSource(token_file=str(tmp_path / "none")).token()
