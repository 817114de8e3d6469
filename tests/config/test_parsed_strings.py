"""Strings another program parses later are parsed when the config is read, with that program's rules.

Each case gives the value at the edge that is accepted and the one just past it that is refused, with the key and
the fix: label selectors (the drain helper's `labels.Parse`), chart versions (Helm would take a range), device
plugin resource names (NVIDIA's `NewResourceName`, for `name` and `rename` alike), names of referenced objects
(Secrets, ConfigMaps, classes: DNS-1123 subdomains), label and annotation maps (qualified keys, label values),
quantities (`network.ofedDriver.resources` as `operator.*.resources`), and text with a trailing newline (a YAML
block scalar), which a `$`-anchored pattern used to let through.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, GpuStackConfig, parse_config

NETWORK = {"enabled": True, "vfDeviceIds": ["101e"]}


def nested(path: str, value: Any) -> dict[str, Any]:
    """`a.b.c` and a value → {a: {b: {c: value}}}."""
    document: Any = value
    for key in reversed(path.split(".")):
        document = {key: document}
    return document


def parsed(document: dict[str, Any]) -> GpuStackConfig:
    return parse_config(document)


def problems(document: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    return {p.path: p.message for p in caught.value.problems}


SELECTOR_PATHS = [
    "operator.driver.upgradePolicy.drain.podSelector",
    "operator.driver.upgradePolicy.waitForCompletion.podSelector",
    "network.ofedDriver.upgradePolicy.drain.podSelector",
    "network.ofedDriver.upgradePolicy.waitForCompletion.podSelector",
]


def selector_document(path: str, selector: str) -> dict[str, Any]:
    document = nested(path, selector)
    if path.startswith("network."):
        document["network"] = {**NETWORK, **document["network"]}
    return document


@pytest.mark.parametrize("path", SELECTOR_PATHS)
@pytest.mark.parametrize("selector", ["app=web,tier in (a,b),!canary", "app", f"{'k' * 63}={'v' * 63}"])
def test_a_selector_the_drain_helper_reads_is_accepted(path: str, selector: str) -> None:
    parsed(selector_document(path, selector))


@pytest.mark.parametrize("path", SELECTOR_PATHS)
@pytest.mark.parametrize(("selector", "why"), [
    ("app in (a", "found 'end of string', expected: ',', ')' or identifier"),
    (f"{'k' * 64}=v", "is not a label key"),
    (f"app={'v' * 64}", "is not a label value"),
    ("app=web,", "expected: identifier after ','"),
    ("app=web||tier=db", "is not a label value"),
])
def test_a_selector_the_drain_helper_would_refuse_is_refused_at_its_key(path: str, selector: str, why: str) -> None:
    """NVIDIA hands these strings to kubectl's drain helper (labels.Parse); a typo would fail the drain on the node,
    or drain other pods than meant."""
    message = problems(selector_document(path, selector))[path]
    assert message.startswith(f"{selector!r} is not a label selector (")
    assert why in message
    assert "e.g. 'app=web,tier in (a,b),!canary'" in message


@pytest.mark.parametrize(("section", "pinned"), [("nfd", "0.19.0"), ("network", "26.4.1")])
@pytest.mark.parametrize("version", ["0.19.1", "26.4.1", "1.0.0-rc.1", "1.0.0+build.5"])
def test_an_exact_chart_version_is_accepted(section: str, pinned: str, version: str) -> None:
    assert getattr(parsed({section: {"chartVersion": version}}), section).chart_version == version


@pytest.mark.parametrize(("section", "pinned"), [("nfd", "0.19.0"), ("network", "26.4.1")])
@pytest.mark.parametrize(("version", "why"), [
    ("latest", "is not a chart version (a chart repository has no 'latest')"),
    (">=26.0", "is a version range for Helm"),
    ("~0.19.0", "is a version range for Helm"),
    ("^26.4.1", "is a version range for Helm"),
    ("0.19.x", "is a version range for Helm"),
    ("0.19", "is a version range for Helm"),
    ("*", "is a version range for Helm"),
    ("v0.19.0", "written without the 'v'"),
    ("0.19.0\n", "is not a chart version"),
    ("0.19.0.1", "is not a chart version"),
])
def test_a_chart_version_helm_would_resolve_later_is_refused(section: str, pinned: str, version: str,
                                                              why: str) -> None:
    message = problems({section: {"chartVersion": version}})[f"{section}.chartVersion"]
    assert why in message
    assert repr(pinned) in message or "without the 'v'" in message


def sharing_document(name: str, rename: str | None) -> dict[str, Any]:
    resource = {"name": name, "replicas": 2, **({"rename": rename} if rename is not None else {})}
    return {"operator": {"devicePlugin": {"config": {"name": "dp", "default": "a"}}},
            "configs": {"devicePlugin": {"a": {"sharing": {"timeSlicing": {"resources": [resource]}}}}}}


def shared_resource(document: dict[str, Any]) -> Any:
    configs = parsed(document).configs.device_plugin
    assert configs is not None and configs["a"].sharing is not None and configs["a"].sharing.time_slicing
    return configs["a"].sharing.time_slicing.resources[0]


# 63 characters in all, `nvidia.com/` included: the edge of api/config/v1 consts.go MaxResourceNameLength
EDGE_NAME = "g" * (63 - len("nvidia.com/"))


@pytest.mark.parametrize("field", ["name", "rename"])
@pytest.mark.parametrize(("written", "qualified"), [
    ("gpu.shared", "nvidia.com/gpu.shared"), ("nvidia.com/gpu-a", "nvidia.com/gpu-a"),
    (EDGE_NAME, f"nvidia.com/{EDGE_NAME}"),
])
def test_name_and_rename_follow_one_rule(field: str, written: str, qualified: str) -> None:
    """k8s-device-plugin v0.20.0 api/config/v1 resources.go `NewResourceName`: both fields are ResourceNames."""
    document = sharing_document(written, None) if field == "name" else sharing_document("gpu", written)
    assert getattr(shared_resource(document), field) == qualified


@pytest.mark.parametrize("field", ["name", "rename"])
@pytest.mark.parametrize("written", [
    "Shared GPU", "gpu..shared", "gpu.-shared", "example.com/gpu", f"{EDGE_NAME}g", "gpu_shared", "gpu\n",
])
def test_a_name_or_rename_the_plugin_refuses_is_refused(field: str, written: str) -> None:
    document = sharing_document(written, None) if field == "name" else sharing_document("gpu", written)
    path = f"configs.devicePlugin.a.sharing.timeSlicing.resources[0].{field}"
    assert problems(document)[path].startswith(f"{written!r} is not a device-plugin resource name: nvidia.com/ and")


OBJECT_NAME_PATHS = [
    "operator.driver.licensingConfig.secretName",
    "operator.driver.licensingConfig.configMapName",
    "operator.driver.secretEnv",
    "operator.driver.repoConfig.configMapName",
    "operator.driver.certConfig.name",
    "operator.driver.kernelModuleConfig.name",
    "operator.driver.virtualTopology.config",
    "operator.migManager.config.name",
    "operator.migManager.gpuClientsConfig.name",
    "operator.dcgmExporter.config.name",
    "operator.vgpuDeviceManager.config.name",
    "operator.daemonsets.priorityClassName",
    "controller.priorityClassName",
]
SUBDOMAIN_253 = ".".join(["a" * 63] * 3 + ["a" * 61])


@pytest.mark.parametrize("path", OBJECT_NAME_PATHS)
def test_an_object_name_of_253_characters_is_accepted(path: str) -> None:
    """The field rule alone: some of these names need more (the driver's ConfigMaps their files listed)."""
    assert len(SUBDOMAIN_253) == 253
    GpuStackConfig.model_validate(nested(path, SUBDOMAIN_253))


@pytest.mark.parametrize("path", OBJECT_NAME_PATHS)
@pytest.mark.parametrize("name", [SUBDOMAIN_253 + "a", "My_Secret", "-secret", "secret.", "secret\n"])
def test_an_object_name_the_api_server_refuses_is_refused(path: str, name: str) -> None:
    message = problems(nested(path, name))[path]
    assert message.startswith(f"{name!r} is not an object name: lower-case letters, digits, '-' and '.'")


def test_an_upper_case_name_is_shown_its_lower_case_form() -> None:
    assert problems(nested("operator.driver.licensingConfig.secretName", "NLS-Token"))[
        "operator.driver.licensingConfig.secretName"].endswith("(perhaps 'nls-token')")


@pytest.mark.parametrize("path", ["operator.driver.imagePullSecrets", "agents.image.pullSecrets"])
def test_pull_secrets_are_secret_names(path: str) -> None:
    document = nested(path, ["Registry Creds"])
    if path.startswith("agents"):
        document["agents"]["image"]["repository"] = "registry.example.com/agents"
    assert "is not a DNS-1123 subdomain" in problems(document)[f"{path}[0]"]


LABEL_MAP_PATHS = ["operator.daemonsets.labels", "operator.operator.labels",
                   "operator.dcgmExporter.serviceMonitor.additionalLabels"]
ANNOTATION_MAP_PATHS = ["operator.daemonsets.annotations", "operator.operator.annotations",
                        "operator.dcgmExporter.annotations"]


@pytest.mark.parametrize("path", LABEL_MAP_PATHS + ANNOTATION_MAP_PATHS)
@pytest.mark.parametrize("key", ["team", f"{'k' * 63}", f"{'p' * 253}/team", "example.com/Team_1.x"])
def test_qualified_keys_are_accepted(path: str, key: str) -> None:
    parsed(nested(path, {key: "v"}))


@pytest.mark.parametrize("path", LABEL_MAP_PATHS + ANNOTATION_MAP_PATHS)
@pytest.mark.parametrize("key", ["bad key!", f"{'k' * 64}", "/team", "a/b/c", "Example.com/team", "team\n"])
def test_a_key_that_is_no_qualified_name_is_refused(path: str, key: str) -> None:
    assert problems(nested(path, {key: "v"}))[path].startswith(f"{key!r} is not a label or annotation key")


@pytest.mark.parametrize("path", LABEL_MAP_PATHS)
def test_label_values_end_at_63_characters(path: str) -> None:
    parsed(nested(path, {"team": "v" * 63}))
    assert problems(nested(path, {"team": "v" * 64}))[path].startswith(f"team: {'v' * 64!r} is not a label value")


@pytest.mark.parametrize("path", ANNOTATION_MAP_PATHS)
def test_annotation_values_are_free_text(path: str) -> None:
    parsed(nested(path, {"example.com/note": "any text: even spaces, and more than 63 characters " * 3}))


@pytest.mark.parametrize(("value", "kept"), [("2Gi", "2Gi"), ("500m", "500m"), (2, 2)])
def test_ofed_driver_resources_take_quantities(value: Any, kept: Any) -> None:
    config = parsed({"network": {**NETWORK, "ofedDriver": {"resources": {"requests": {"memory": value}}}}})
    assert config.network.ofed_driver.resources.requests == {"memory": kept}


@pytest.mark.parametrize(("value", "why"), [
    ("lots", "'lots' is not a Kubernetes quantity (examples: 500m, 1Gi, 2)"),
    ("2GB", "did you mean 2Gi (binary) or 2G (decimal)?"),
    (0.5, "0.5 is read as a number with a fraction"),
    (True, "must be a quantity such as 500m, 1Gi or 2, got true"),
])
@pytest.mark.parametrize("section", ["network.ofedDriver", "operator.driver"])
def test_a_quantity_the_api_server_cannot_parse_is_refused_in_both_sections(section: str, value: Any,
                                                                             why: str) -> None:
    """The same rule on both paths: `network.ofedDriver.resources` used to be plain strings, and an unparseable
    one was an internal error of the render."""
    document = nested(f"{section}.resources.requests.memory", value)
    if section.startswith("network"):
        document["network"] = {**NETWORK, **document["network"]}
    assert why in problems(document)[f"{section}.resources.requests.memory"]


@pytest.mark.parametrize(("path", "value"), [
    ("namespace", "gpu-operator\n"),
    ("aks", {"resourceGroup": "rg\n", "clusterName": "c"}),
    ("aks", {"resourceGroup": "rg", "clusterName": "c\n"}),
    ("aks", {"resourceGroup": "rg", "clusterName": "c", "kubernetesVersion": "1.34\n"}),
    ("operator", {"driver": {"version": "595.91.07\n"}}),
])
def test_a_trailing_newline_is_not_part_of_a_valid_name(path: str, value: Any) -> None:
    """`key: |` block scalars end in a newline; Python's `$` matches before it, `\\Z` does not."""
    assert problems({path: value})


ENV_PATHS = ["operator.driver.env", "operator.toolkit.env", "operator.devicePlugin.env", "operator.driver.manager.env",
             "operator.validator.env", "operator.validator.plugin.env", "operator.gds.env",
             "network.ofedDriver.env"]


def env_document(path: str, variables: list[dict[str, str]]) -> dict[str, Any]:
    document = nested(path, variables)
    if path.startswith("network."):
        document["network"] = {**NETWORK, **document["network"]}
    return document


@pytest.mark.parametrize("path", ENV_PATHS)
def test_env_names_and_duplicates_follow_one_rule_in_every_section(path: str) -> None:
    """`network.ofedDriver.env` refused a bad name and a name given twice; the operator's sections took both (the
    later variable silently hides the earlier one in the pod)."""
    parsed(env_document(path, [{"name": "A_1.b-c", "value": "x"}, {"name": "_B", "value": "y"}]))
    twice = problems(env_document(path, [{"name": "MODE", "value": "a"}, {"name": "MODE", "value": "b"}]))
    assert twice[path].startswith("variable listed twice: MODE (the later one would silently hide the first)")
    named = problems(env_document(path, [{"name": "1ST VAR", "value": "a"}]))
    assert named[f"{path}[0].name"].startswith("'1ST VAR' is not an environment variable name")


@pytest.mark.parametrize(("key", "accepted"), [("team", True), ("example.com/team", True), ("/team", False),
                                               ("example.com/", False), ("a/b/c", False)])
def test_pool_labels_are_qualified_names_as_the_api_server_reads_them(key: str, accepted: bool) -> None:
    """apimachinery `IsQualifiedName`: a '/' needs a prefix before it and a name after it."""
    document = {"aks": {"resourceGroup": "rg", "clusterName": "c", "kubernetesVersion": "1.34"},
                "pools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "labels": {key: "x"}}]}
    if accepted:
        parsed(document)
    else:
        assert problems(document)["pools[0].labels"].startswith(f"{key!r} is not a label key")
