"""HTTPS: the in-cluster service account (CA + rotating token) and kubeconfig client certificates.

Certificates are made by the `openssl` command for each test run; the tests skip without it.
"""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gpu_operator.agents.kube import (
    NODES,
    ApiUnreachable,
    KubeClient,
    KubeConfigError,
    in_cluster_config,
    kubeconfig_config,
)
from gpu_operator.agents.kube.config import ClusterConfig
from tests.agents.kube.fake_apiserver import FAST_RETRY, FakeApiServer

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}


def _certificate(directory: Path, name: str) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed: no certificates for the TLS tests")
    certificate, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            f"/CN={name}",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(certificate),
        ],
        check=True,
        capture_output=True,
    )
    return certificate, key


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    directory = tmp_path_factory.mktemp("certs")
    return {name: _certificate(directory, name) for name in ("server", "client", "stranger")}


def _server_context(certificates: dict[str, tuple[Path, Path]], require_client: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificates["server"])
    if require_client:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=str(certificates["client"][0]))
    return context


@pytest.fixture
def https(certificates: dict[str, tuple[Path, Path]]) -> Iterator[FakeApiServer]:
    with FakeApiServer(token="sa-token", tls=_server_context(certificates, require_client=False)) as server:
        server.add(NODE)
        yield server


def test_in_cluster_over_https(https: FakeApiServer, certificates: dict, tmp_path: Path) -> None:
    account = tmp_path / "sa"
    account.mkdir()
    (account / "token").write_text("sa-token")
    (account / "ca.crt").write_bytes(certificates["server"][0].read_bytes())
    port = https.url.rsplit(":", 1)[1]
    config = in_cluster_config({"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}, account)
    client = KubeClient(config, retry=FAST_RETRY)
    assert client.get(NODES, "n1")["metadata"]["name"] == "n1"
    assert https.requests[-1].headers["authorization"] == "Bearer sa-token"


def test_an_untrusted_server_is_refused(https: FakeApiServer, certificates: dict) -> None:
    config = ClusterConfig(server=https.url, token="sa-token", ca_file=str(certificates["stranger"][0]))
    with pytest.raises(ApiUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
        KubeClient(config, retry=FAST_RETRY).get(NODES, "n1")
    insecure = ClusterConfig(server=https.url, token="sa-token", insecure_skip_tls_verify=True)
    assert KubeClient(insecure, retry=FAST_RETRY).get(NODES, "n1")["metadata"]["name"] == "n1"


def test_kubeconfig_client_certificate(certificates: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    encode = lambda path: base64.b64encode(path.read_bytes()).decode()
    with FakeApiServer(tls=_server_context(certificates, require_client=True)) as server:
        server.add(NODE)
        document = {
            "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            "clusters": [
                {
                    "name": "k",
                    "cluster": {"server": server.url, "certificate-authority-data": encode(certificates["server"][0])},
                }
            ],
            "users": [
                {
                    "name": "u",
                    "user": {
                        "client-certificate-data": encode(certificates["client"][0]),
                        "client-key-data": encode(certificates["client"][1]),
                    },
                }
            ],
        }
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(document))
        client = KubeClient(kubeconfig_config(path), retry=FAST_RETRY)
        assert client.get(NODES, "n1")["metadata"]["name"] == "n1"
        assert server.requests[-1].client_certificate is True
        assert "authorization" not in server.requests[-1].headers
        assert list(scratch.iterdir()) == []  # the inline key was written privately and removed again


def test_a_missing_ca_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="invalid TLS configuration"):
        KubeClient(ClusterConfig(server="https://127.0.0.1:1", ca_file=str(tmp_path / "none.crt")))
