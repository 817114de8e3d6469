"""Imports (and hand-written documents) that must be refused, each with the key and the fix, and what must not be.

Refused: unrendered template syntax, image references no registry can parse, node OSes no driver image exists
for, a `defaultRuntime` that contradicts the rendered runtime, keys older charts had (with where they went), an
umbrella chart's values (a `gpu-operator:` subtree). Accepted: a mirrored repository on a disabled operand, `null`
where Kubernetes accepts it, `global:` (it reaches the NFD subchart, as Helm passes it). No message names a Python
type.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.importers import ignored_helm_values, import_clusterpolicy, import_helm_values

DIGEST = "sha256:" + "0123456789abcdef" * 4


def helm_problems(values: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        import_helm_values(values)
    return {p.path: p.message for p in caught.value.problems}


def document_problems(document: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    return {p.path: p.message for p in caught.value.problems}


def manifest(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
            "spec": spec}


# --- template syntax -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values, path, text",
    [
        ({"driver": {"version": "${driver_version}"}}, "driver.version",
         "'${driver_version}' is a shell or envsubst variable, left unrendered"),
        ({"toolkit": {"repository": "{{ .Values.registry }}/nvidia/k8s"}}, "toolkit.repository",
         "'{{ .Values.registry }}' is a Go/Helm template expression, left unrendered"),
        ({"daemonsets": {"labels": {"team": "<no value>"}}}, "daemonsets.labels.team",
         "'<no value>' is what a Go template writes for a missing value, left unrendered"),
        ({"toolkit": {"env": [{"name": "CONTAINERD_SOCKET", "value": "${SOCKET}"}]}}, "toolkit.env[0].value",
         "'${SOCKET}' is a shell or envsubst variable"),
    ],
)
def test_unrendered_template_syntax_is_refused(values: dict[str, Any], path: str, text: str) -> None:
    found = helm_problems(values)
    assert path in found, found
    assert found[path].startswith(text)
    assert "render the file first" in found[path]


def test_template_syntax_in_a_clusterpolicy_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        import_clusterpolicy(manifest({"driver": {"version": "{{ .Values.driver.version }}"}}))
    [problem] = caught.value.problems
    assert problem.path == "spec.driver.version" and "Go/Helm template expression" in problem.message


def test_kubernetes_env_references_are_not_templates() -> None:
    values = {"dcgmExporter": {"env": [{"name": "DCGM_HOSTNAME", "value": "$(NODE_NAME)"}]}}
    assert import_helm_values(values)["operator"]["dcgmExporter"]["env"][0]["value"] == "$(NODE_NAME)"


# --- image references ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "section, path, text",
    [
        ({"repository": "myregistry.example.com/NVIDIA"}, "repository",
         "'myregistry.example.com/NVIDIA' is not a valid image repository: path component 'NVIDIA' must be "
         "lower-case letters and digits, separated by '.', '_', '__' or '-'; write 'nvidia'"),
        ({"repository": "my_registry.example.com:port/nvidia"}, "repository",
         "is not a registry host[:port]"),
        ({"image": "Driver"}, "image", "'Driver' is not a valid image: path component 'Driver'"),
        ({"image": "nvcr.io/nvidia/driver:550.90.07"}, "image",
         "for a full reference in image, set repository and version to ''"),
        ({"version": "550.90.07 ubuntu"}, "version", "'550.90.07 ubuntu' is not a valid image tag"),
        ({"version": "-rc1"}, "version", "not starting with '.' or '-'"),
        ({"version": "sha256:abc"}, "version", "digest 'sha256:abc' must be 'sha256:' followed by 64 lower-case"),
        ({"version": "0123456789abcdef" * 4}, "version", "looks like a digest without the 'sha256:' prefix"),
        ({"repository": "", "version": "", "image": "nvcr.io/nvidia/driver@sha256:abc"}, "image",
         "digest 'sha256:abc' must be"),
        ({"repository": "", "version": "", "image": "nvcr.io/nvidia/driver:bad tag"}, "image", "not a valid image tag"),
    ],
)
def test_invalid_image_references_are_refused_in_documents_and_imports(
    section: dict[str, Any], path: str, text: str
) -> None:
    found = document_problems({"operator": {"driver": section}})
    assert text in found[f"operator.driver.{path}"]
    assert text in helm_problems({"driver": section})[f"driver.{path}"]


@pytest.mark.parametrize(
    "section",
    [
        {"repository": "myregistry.example.com:5000/mirror/nvidia"},
        {"repository": "localhost:5000/nvidia"},
        {"repository": "[fd00::1]:5000/nvidia"},
        {"version": DIGEST},
        {"version": "550.90.07_rc-1.x"},
        {"repository": "", "version": "", "image": f"nvcr.io/nvidia/driver:550.90.07@{DIGEST}"},
        {"repository": "", "version": "", "image": "localhost/driver"},
    ],
)
def test_valid_image_references_are_accepted(section: dict[str, Any]) -> None:
    parse_config({"operator": {"driver": section}})


def test_an_image_reference_registries_refuse_for_its_length_is_refused() -> None:
    found = document_problems({"operator": {"toolkit": {"repository": "r.example.com/" + "a" * 250}}})
    assert "longer than 255 characters" in found["operator.toolkit"]


def test_a_mirrored_repository_on_a_disabled_operand_is_not_incomplete() -> None:
    config = parse_config(import_helm_values({"vgpuManager": {"repository": "myregistry.example.com/nvidia"}}))
    assert config.operator.vgpu_manager.repository == "myregistry.example.com/nvidia"
    # switched on, the same half reference is refused: the pod could not start
    found = helm_problems({"vgpuManager": {"enabled": True, "repository": "myregistry.example.com/nvidia"},
                           "sandboxWorkloads": {"enabled": True}})
    assert "incomplete (version empty)" in found["vgpuManager"]


# --- node operating systems ------------------------------------------------------------------------------------


def test_an_os_without_a_driver_image_is_refused_with_the_supported_ids() -> None:
    found = document_problems({"cluster": {"operatingSystems": [{"id": "windows", "versionId": "2022"}]}})
    assert list(found) == ["cluster.operatingSystems[0].id"]
    message = found["cluster.operatingSystems[0].id"]
    assert message.startswith("'windows' is not an OS that NVIDIA's driver image exists for: use ubuntu, rhel, rocky")
    assert "sles" in message and "azurelinux" in message


@pytest.mark.parametrize("os_id", ["ubuntu", "rhel", "rocky"])
def test_oses_with_published_driver_images_are_accepted(os_id: str) -> None:
    parse_config({"cluster": {"operatingSystems": [{"id": os_id, "versionId": "9"}]}})


@pytest.mark.parametrize("os_id", ["sles", "azurelinux"])
def test_oses_without_published_driver_images_need_a_driver_image_of_your_own(os_id: str) -> None:
    found = document_problems({"cluster": {"operatingSystems": [{"id": os_id, "versionId": "9"}]}})
    assert found["cluster.operatingSystems[0].id"].startswith(f"NVIDIA publishes no driver image for {os_id}")
    parse_config({"cluster": {"operatingSystems": [{"id": os_id, "versionId": "9"}]},
                  "operator": {"driver": {"repository": "registry.example.com/drivers"}}})
    parse_config({"cluster": {"operatingSystems": [{"id": os_id, "versionId": "9"}]},
                  "operator": {"driver": {"enabled": False}}})


# --- the container runtime -------------------------------------------------------------------------------------


def test_default_runtime_contradicting_the_cluster_names_both_fields() -> None:
    found = document_problems({"operator": {"operator": {"defaultRuntime": "crio"}}})
    assert found == {
        "operator.operator.defaultRuntime": "'crio' contradicts cluster.containerRuntime 'containerd', the runtime "
        "the operands are rendered for; set cluster.containerRuntime: crio if the GPU nodes run it, or remove "
        "defaultRuntime"
    }


def test_an_imported_default_runtime_is_the_rendered_runtime() -> None:
    for importer, data in ((import_helm_values, {"operator": {"defaultRuntime": "crio"}}),
                           (import_clusterpolicy, manifest({"operator": {"defaultRuntime": "crio"}}))):
        config = parse_config(importer(data))
        assert config.cluster.container_runtime == "crio"
        toolkit = next(o for o in _render(config) if o["metadata"]["name"] == "nvidia-container-toolkit-daemonset")
        env = {e["name"]: e.get("value") for e in toolkit["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["RUNTIME"] == "crio"


def test_an_unknown_default_runtime_is_refused() -> None:
    assert helm_problems({"operator": {"defaultRuntime": "podman"}}) == {
        "operator.defaultRuntime": "'podman' is not a container runtime; use containerd, crio, docker"
    }


def _render(config: Any) -> list[dict[str, Any]]:
    from gpu_operator.render import render

    return render(config)


# --- keys older charts had, and umbrella charts ----------------------------------------------------------------


@pytest.mark.parametrize(
    "values, path, text",
    [
        ({"gfd": {"migStrategy": "mixed"}}, "gfd.migStrategy", "moved to mig.strategy"),
        ({"devicePlugin": {"migStrategy": "single"}}, "devicePlugin.migStrategy", "moved to mig.strategy"),
        ({"driver": {"tolerations": []}}, "driver.tolerations", "set daemonsets.tolerations"),
        ({"dcgmExporter": {"nodeSelector": {"nvidia.com/gpu.deploy.dcgm-exporter": "true"}}},
         "dcgmExporter.nodeSelector", "nvidia.com/gpu.deploy.dcgm-exporter=false"),
        ({"gfd": {"affinity": {}}}, "gfd.affinity", "nvidia.com/gpu.deploy.gpu-feature-discovery=false"),
        ({"toolkit": {"priorityClassName": "x"}}, "toolkit.priorityClassName", "moved to daemonsets.priorityClassName"),
        ({"validator": {"podSecurityContext": {}}}, "validator.podSecurityContext",
         "moved to daemonsets.podSecurityContext"),
        ({"driver": {"securityContext": {"privileged": True}}}, "driver.securityContext", "removed from the chart"),
        ({"driver": {"use_ocp_driver_toolkit": True}}, "driver.use_ocp_driver_toolkit",
         "moved to operator.use_ocp_driver_toolkit"),
        ({"driver": {"repoConfig": {"destinationDir": "/etc/yum.repos.d"}}}, "driver.repoConfig.destinationDir",
         "keep driver.repoConfig.configMapName"),
    ],
)
def test_keys_removed_from_the_chart_say_where_the_setting_went(values: dict[str, Any], path: str, text: str) -> None:
    found = helm_problems(values)
    assert found[path].startswith("not a value of the GPU Operator v26.7.0 chart: ")
    assert text in found[path] and "check the spelling" not in found[path]


def test_a_typo_still_says_check_the_spelling() -> None:
    assert "check the spelling" in helm_problems({"gfd": {"migStrategie": "mixed"}})["gfd.migStrategie"]


def test_umbrella_values_get_a_hint_to_pass_the_subtree() -> None:
    found = helm_problems({"gpu-operator": {"driver": {"enabled": False}}, "network-operator": {}, "global": {}})
    assert list(found) == ["gpu-operator"]
    assert "import the gpu-operator subtree alone" in found["gpu-operator"]


def test_global_values_reach_the_nfd_subchart_as_helm_passes_them() -> None:
    # Helm gives a chart's `global:` to its subcharts; NFD reads global.imagePullSecrets, nothing reads the rest
    values = {"global": {"imagePullSecrets": [{"name": "regcred"}], "storageClass": "fast"},
              "node-feature-discovery": {"worker": {"priorityClassName": "gpu-critical"}}}
    config = parse_config(import_helm_values(values))
    assert config.nfd.values["global"] == values["global"]
    assert config.nfd.values["worker"]["priorityClassName"] == "gpu-critical"
    assert config.nfd.values["master"]["config"]["extraLabelNs"] == ["nvidia.com"]
    note = ignored_helm_values(values)["global"]
    assert "global.storageClass" in note and "gpu-operator: subtree" in note
    assert "global" not in ignored_helm_values({"global": {"imagePullSecrets": [{"name": "regcred"}]}})


# --- null, and messages without Python types ------------------------------------------------------------------


def test_null_in_a_clusterpolicy_is_absent_as_kubernetes_stores_it() -> None:
    spec = {"validator": {"plugin": None, "driver": {"env": None}}, "driver": {"repoConfig": None}, "gds": None}
    config = parse_config(import_clusterpolicy(manifest(spec)))
    assert config.operator.validator.plugin.env == () and config.operator.gds.enabled is False


@pytest.mark.parametrize(
    "document, path, message",
    [
        ({"operator": {"validator": {"plugin": None}}}, "operator.validator.plugin", "must be a mapping, got null"),
        ({"operator": {"validator": {"plugin": "on"}}}, "operator.validator.plugin",
         "must be a mapping, got 'on'"),
        ({"operator": {"driver": {"env": {"A": "1"}}}}, "operator.driver.env", "must be a list, got a mapping"),
        ({"cluster": {"operatingSystems": []}}, "cluster.operatingSystems", "must list at least 1 item"),
    ],
)
def test_messages_name_no_python_type(document: dict[str, Any], path: str, message: str) -> None:
    found = document_problems(document)
    assert found[path] == message
    assert not re.search(r"\b(tuple|dict|NoneType|EnvOnly|instance of|[A-Z][a-z]+Spec)\b", found[path])


def test_import_errors_name_no_python_type() -> None:
    found = helm_problems({"driver": "yes", "devicePlugin": {"config": ["a"]}})
    assert found == {
        "driver": "must be a mapping, got the string 'yes'",
        "devicePlugin.config": "must be a mapping, got a list",
    }
