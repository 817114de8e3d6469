"""The driver's repository and certificate ConfigMaps, and host subscriptions, against NVIDIA's
`transformDriverContainer` and `createConfigMapVolumeMounts` (controllers/object_controls.go, v26.7.0)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError
from gpu_operator.render.operands import driver
from tests.render.operands.helpers import assert_valid, container, find, pod_of, render_operand, volume_paths

UBUNTU = {"id": "ubuntu", "versionId": "22.04"}
RHEL = {"id": "rhel", "versionId": "9.4"}
SLES = {"id": "sles", "versionId": "15.6"}
REPOS = {
    "nvidia.list": "deb https://mirror.example/nvidia /\n",
    "base.list": "deb https://mirror.example/ubuntu jammy main\n",
}


def _render(driver_spec: dict[str, Any], configs: dict[str, Any] | None = None, **cluster: Any) -> list[dict[str, Any]]:
    document: dict[str, Any] = {
        "cluster": {"operatingSystems": [UBUNTU], **cluster},
        "operator": {"driver": driver_spec, "gdrcopy": {"enabled": True}},
        "configs": configs or {},
    }
    objects = render_operand(driver.render, document)
    assert_valid(objects)
    return objects


def _mounts_of(ctr: dict[str, Any], volume: str) -> list[dict[str, Any]]:
    return [m for m in ctr["volumeMounts"] if m["name"] == volume]


def test_each_repo_and_cert_key_is_its_own_file_beside_the_images_files() -> None:
    """NVIDIA's `createConfigMapVolumeMounts` mounts one `subPath` per ConfigMap key (keys sorted) into the OS's
    repository and CA directories, and the volume lists exactly those keys, so the image's own repository files
    and CA bundle stay. The driver container and the GDS/GDRCopy sidecars get the same mounts."""
    objects = _render(
        {"repoConfig": {"configMapName": "repos"}, "certConfig": {"name": "certs"}},
        {"driverRepoConfig": REPOS, "driverCertConfig": ["corp-ca.crt"]},
    )
    ds = find(objects, "DaemonSet")
    volumes = {v["name"]: v for v in pod_of(ds)["volumes"]}
    items = [{"key": "base.list", "path": "base.list"}, {"key": "nvidia.list", "path": "nvidia.list"}]
    assert volumes["repos"]["configMap"] == {"name": "repos", "items": items}
    assert volumes["certs"]["configMap"] == {"name": "certs", "items": [{"key": "corp-ca.crt", "path": "corp-ca.crt"}]}
    for name in ("nvidia-driver-ctr", "nvidia-gdrcopy-ctr"):
        ctr = container(ds, name)
        assert _mounts_of(ctr, "repos") == [
            {"name": "repos", "mountPath": "/etc/apt/sources.list.d/base.list", "readOnly": True,
             "subPath": "base.list"},
            {"name": "repos", "mountPath": "/etc/apt/sources.list.d/nvidia.list", "readOnly": True,
             "subPath": "nvidia.list"},
        ]
        assert _mounts_of(ctr, "certs") == [{
            "name": "certs", "mountPath": "/usr/local/share/ca-certificates/corp-ca.crt", "readOnly": True,
            "subPath": "corp-ca.crt",
        }]


def test_files_given_create_the_configmap_and_key_lists_refer_to_an_existing_one() -> None:
    objects = _render(
        {"repoConfig": {"configMapName": "repos"}, "certConfig": {"name": "certs"}},
        {"driverRepoConfig": REPOS, "driverCertConfig": ["corp-ca.crt"]},
    )
    repos = find(objects, "ConfigMap", "repos")
    assert repos["data"] == REPOS and repos["metadata"]["namespace"] == "gpu-operator"
    assert [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "certs"] == []
    kinds = [o["kind"] for o in objects]
    assert kinds.index("ConfigMap") < kinds.index("DaemonSet")


@pytest.mark.parametrize(("spec", "path", "section"), [
    ({"repoConfig": {"configMapName": "repos"}}, "operator.driver.repoConfig.configMapName",
     "configs.driverRepoConfig"),
    ({"certConfig": {"name": "certs"}}, "operator.driver.certConfig.name", "configs.driverCertConfig"),
])
def test_a_configmap_whose_keys_are_unknown_is_refused(spec: dict[str, Any], path: str, section: str) -> None:
    """Mounting the whole ConfigMap over the directory would hide the image's files; guessing keys would miss
    files. Without its keys, the config is refused with the fix."""
    with pytest.raises(ConfigError) as error:
        _render(spec)
    [problem] = error.value.problems
    assert problem.path == path
    assert section in problem.message and "[file, ...]" in problem.message


@pytest.mark.parametrize(("configs", "path", "message"), [
    ({"driverRepoConfig": REPOS}, "configs.driverRepoConfig", "set operator.driver.repoConfig.configMapName"),
    ({"driverCertConfig": ["a.crt"]}, "configs.driverCertConfig", "set operator.driver.certConfig.name"),
    ({"driverRepoConfig": ["../x"]}, "configs.driverRepoConfig", "not a ConfigMap key"),
    ({"driverRepoConfig": ["a.list", "a.list"]}, "configs.driverRepoConfig", "listed twice"),
    ({"driverRepoConfig": {}}, "configs.driverRepoConfig", "lists no file"),
])
def test_driver_files_without_their_configmap_or_with_bad_keys(
    configs: dict[str, Any], path: str, message: str
) -> None:
    with pytest.raises(ConfigError) as error:
        _render({}, configs)
    [problem] = error.value.problems
    assert problem.path == path and message in problem.message


def test_files_nothing_mounts_are_refused() -> None:
    document = {
        "cluster": {
            "operatingSystems": [{**UBUNTU, "kernelVersions": ["5.15.0-1074-azure"]}], "unlistedKernels": "none",
        },
        "operator": {"driver": {"usePrecompiled": True, "repoConfig": {"configMapName": "repos"}}},
        "configs": {"driverRepoConfig": REPOS},
    }
    with pytest.raises(ConfigError) as error:
        render_operand(driver.render, document)
    assert [p.path for p in error.value.problems] == ["configs.driverRepoConfig"]


def test_rhel_repo_config_replaces_the_host_subscription_mounts() -> None:
    """NVIDIA's `transformDriverContainer` skips the RHEL host subscription mounts (`/etc/pki/entitlement`,
    `/etc/yum.repos.d/redhat.repo`, `/etc/rhsm`, with hostPath types that fail on unsubscribed hosts) when a
    repoConfig gives the repositories; SLES credentials are still mounted."""
    with_repos = {"repoConfig": {"configMapName": "repos"}}
    rhel = find(_render(with_repos, {"driverRepoConfig": ["redhat.repo"]}, operatingSystems=[RHEL]), "DaemonSet")
    assert not [name for name in volume_paths(rhel) if name.startswith("subscription-config")]
    plain = find(_render({}, operatingSystems=[RHEL]), "DaemonSet")
    assert [path for name, path in volume_paths(plain).items() if name.startswith("subscription-config")] == [
        "/etc/pki/entitlement", "/etc/yum.repos.d/redhat.repo", "/etc/rhsm",
    ]
    own_image = {**with_repos, "repository": "registry.example.com/drivers"}  # NVIDIA publishes none for SLES
    sles = find(_render(own_image, {"driverRepoConfig": ["sles.repo"]}, operatingSystems=[SLES]), "DaemonSet")
    assert [path for name, path in volume_paths(sles).items() if name.startswith("subscription-config")] == [
        "/etc/SUSEConnect", "/etc/zypp/credentials.d",
    ]


def test_precompiled_with_compiling_fallback_mounts_them_only_where_it_compiles() -> None:
    document = {
        "cluster": {"operatingSystems": [{**UBUNTU, "kernelVersions": ["5.15.0-1074-azure"]}]},
        "operator": {"driver": {"usePrecompiled": True, "repoConfig": {"configMapName": "repos"}}},
        "configs": {"driverRepoConfig": REPOS},
    }
    objects = render_operand(driver.render, document)
    assert_valid(objects)
    daemonsets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "DaemonSet"}
    assert _mounts_of(container(daemonsets["nvidia-driver-daemonset-5.15.0-1074-azure-ubuntu22.04"],
                                "nvidia-driver-ctr"), "repos") == []
    assert len(_mounts_of(container(daemonsets["nvidia-driver-daemonset"], "nvidia-driver-ctr"), "repos")) == 2
    assert find(objects, "ConfigMap", "repos")
