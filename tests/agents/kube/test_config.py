"""Which configuration the agents use: an explicit kubeconfig, else `$KUBECONFIG`, else the pod's service account."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from gpu_operator.agents.kube import NODES, KubeClient, KubeConfigError, load_config
from tests.agents.kube.fake_apiserver import FakeApiServer


@pytest.fixture
def service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pod's mounted service account, and the environment kubelet gives the pod."""
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text("sa-token\n")
    (directory / "namespace").write_text("gpu-operator")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return directory


def kubeconfig(tmp_path: Path, name: str, server: str = "https://k8s.example:6443", **context: str) -> Path:
    document = {
        "current-context": "dev",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "abc"}}],
        "contexts": [{"name": "dev", "context": {"cluster": "c", "user": "u", **context}}],
    }
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document))
    return path


def test_in_a_pod_the_service_account(service_account: Path) -> None:
    config = load_config(None, None, str(service_account))
    assert config.cluster.server == "https://10.0.0.1:443"
    assert config.cluster.certificate_auth == str(service_account / "ca.crt")
    assert config.user is not None and config.user.token_file == str(service_account / "token")
    assert config.namespace == "gpu-operator"


def test_kubeconfig_wins_over_the_service_account(service_account: Path, tmp_path: Path) -> None:
    first, second = kubeconfig(tmp_path, "a", namespace="team"), kubeconfig(tmp_path, "b", "https://other:6443")
    listed = os.pathsep.join([str(tmp_path / "missing"), str(first), str(second)])
    config = load_config({**os.environ, "KUBECONFIG": listed}, None, str(service_account))
    assert config.cluster.server == "https://k8s.example:6443" and config.namespace == "team"
    assert load_config({"KUBECONFIG": str(first)}, str(second)).cluster.server == "https://other:6443"


def test_no_configuration_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(KubeConfigError, match="not running in a cluster"):
        load_config({}, None, str(tmp_path))
    with pytest.raises(KubeConfigError, match="no kubeconfig file at /nowhere/config"):
        load_config({"KUBECONFIG": "/nowhere/config", "KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    with pytest.raises(KubeConfigError, match="no kubeconfig file at /nowhere/explicit"):
        load_config({}, "/nowhere/explicit")


def test_a_pod_without_its_service_account_token(service_account: Path) -> None:
    (service_account / "token").unlink()
    with pytest.raises(KubeConfigError, match="unusable Kubernetes configuration"):
        load_config(None, None, str(service_account))


def test_an_unusable_kubeconfig(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("clusters: [")
    with pytest.raises(KubeConfigError, match="unusable Kubernetes configuration"):
        load_config({"KUBECONFIG": str(path)})
    path.write_text(yaml.safe_dump({"clusters": [], "contexts": [], "users": []}))
    with pytest.raises(KubeConfigError, match="No current context"):
        load_config({"KUBECONFIG": str(path)})


def test_a_missing_certificate_authority_is_a_configuration_error(tmp_path: Path) -> None:
    document = yaml.safe_load(kubeconfig(tmp_path, "config").read_text())
    document["clusters"][0]["cluster"]["certificate-authority"] = str(tmp_path / "missing-ca.crt")
    (tmp_path / "config").write_text(yaml.safe_dump(document))
    with pytest.raises(KubeConfigError, match="unusable configuration for https://k8s.example:6443"):
        KubeClient.from_environment({"KUBECONFIG": str(tmp_path / "config")})


def test_the_token_file_is_read_by_lightkube_and_sent(tmp_path: Path) -> None:
    with FakeApiServer(token="rotated") as server:
        server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        (tmp_path / "token").write_text("rotated\n")
        document = yaml.safe_load(kubeconfig(tmp_path, "config", server.url).read_text())
        document["users"][0]["user"] = {"tokenFile": str(tmp_path / "token")}
        (tmp_path / "config").write_text(yaml.safe_dump(document))
        client = KubeClient.from_environment({"KUBECONFIG": str(tmp_path / "config")})
        assert client.get(NODES, "n1")["metadata"]["name"] == "n1"
        assert server.requests[-1].headers["authorization"] == "Bearer rotated"
