"""The config models: chart defaults, immutability, strictness and camelCase keys.

Defaults are compared with the upstream v26.7.0 `values.yaml`, read programmatically: every value the chart sets
for a ClusterPolicy field must be our model's default (the validator and node status exporter versions, which
the chart leaves to its appVersion, must be v26.7.0).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any
from collections.abc import Iterator

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from gpu_operator import UPSTREAM_OPERATOR_VERSION
from gpu_operator.config import ClusterPolicySpec, GpuStackConfig, parse_config
from tests.support.reference import reference_file

#: the one values key the chart renames on its way into the ClusterPolicy
RENAMED = {"gpuPodDeletion": "podDeletion"}
#: values sections that are not ClusterPolicy sections
NOT_CLUSTERPOLICY = {
    "platform", "nfd", "clusterPolicy", "gpuCluster", "draDriver", "extraObjects", "node-feature-discovery",
}
#: values keys that only shape Helm's own objects (the operator Deployment, created ConfigMaps, NVIDIADriver CRs)
HELM_ONLY = re.compile(
    r"^operator\.(repository|image|imagePullPolicy|imagePullSecrets|env|priorityClassName|nodeSelector|cleanupCRD"
    r"|upgradeCRD|tolerations|annotations|affinity|logging|resources)(\.|$)"
    r"|^driver\.nvidiaDriverCRD\.|^(devicePlugin|migManager)\.config\.(create|data)$"
)
#: chart values whose meaning our model gives another form, with the reason
TRANSLATED = {
    # "create where the ServiceMonitor CRD exists": our unset switch, decided by cluster.prometheusOperator
    "dcgmExporter.serviceMonitor.enabled": None,
}
OPERANDS = (
    "driver", "toolkit", "devicePlugin", "dcgm", "dcgmExporter", "gfd", "migManager", "nodeStatusExporter", "gds",
    "gdrcopy", "vgpuManager", "vgpuDeviceManager", "vfioManager", "kataManager", "sandboxDevicePlugin",
    "kataSandboxDevicePlugin", "ccManager", "validator",
)


@cache
def _chart_values() -> dict[str, Any]:
    return yaml.safe_load(reference_file("helm-values/gpu-operator-v26.7.0-values.yaml").read_text())


def _leaves(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    else:
        yield path, value


def _ours(document: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = document
    for part in path:
        part = RENAMED.get(part, part)
        if not isinstance(node, dict) or part not in node:
            return KeyError
        node = node[part]
    return node


def _is_empty(value: Any) -> bool:
    return value in ({}, [], "", None)


def test_every_chart_value_for_a_clusterpolicy_field_is_our_default() -> None:
    ours = ClusterPolicySpec().to_document()
    compared, problems = 0, []
    for section, block in _chart_values().items():
        if section in NOT_CLUSTERPOLICY:
            continue
        for path, value in _leaves(block, (section,)):
            key = ".".join(path)
            default = _ours(ours, path)
            if key in TRANSLATED:
                compared += 1
                if (None if default is KeyError else default) != TRANSLATED[key]:
                    problems.append(f"{key}: chart {value!r} should be ours {TRANSLATED[key]!r}, ours {default!r}")
                continue
            if default is KeyError:
                if not (_is_empty(value) or HELM_ONLY.match(key)):
                    problems.append(f"{key}: the chart sets {value!r}, our model has no such default")
                continue
            compared += 1
            if default != value:
                problems.append(f"{key}: chart {value!r}, ours {default!r}")
    assert problems == []
    assert compared > 150


@pytest.mark.parametrize("section", OPERANDS)
def test_operand_image_and_switch_are_the_charts(section: str) -> None:
    chart = _chart_values()[section]
    ours = ClusterPolicySpec().to_document()[section]
    for key in ("repository", "image", "version", "enabled", "imagePullPolicy"):
        if key in chart:
            assert ours[key] == chart[key], key
    if "version" not in chart and "image" in chart:
        assert ours["version"] == UPSTREAM_OPERATOR_VERSION


def test_operands_that_read_the_app_version() -> None:
    spec = ClusterPolicySpec()
    assert "version" not in _chart_values()["validator"]
    assert (spec.validator.version, spec.node_status_exporter.version) == ("v26.7.0", "v26.7.0")
    assert UPSTREAM_OPERATOR_VERSION == "v26.7.0"


def test_nfd_defaults_are_the_charts() -> None:
    nfd = GpuStackConfig().nfd
    assert nfd.to_document(exclude_defaults=True) == {}
    assert {"enabled": nfd.enabled, "nodefeaturerules": nfd.node_feature_rules} == _chart_values()["nfd"]
    assert nfd.values == _chart_values()["node-feature-discovery"]


def _models(model: type[BaseModel], seen: set[type[BaseModel]] | None = None) -> Iterator[type[BaseModel]]:
    seen = set() if seen is None else seen
    if model in seen:
        return
    seen.add(model)
    yield model
    for field in model.model_fields.values():
        for nested in _nested_models(field.annotation):
            yield from _models(nested, seen)


def _nested_models(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in getattr(annotation, "__args__", ()):
        yield from _nested_models(arg)


ALL_MODELS = tuple(_models(GpuStackConfig))


def test_models_are_frozen() -> None:
    config = parse_config({})
    with pytest.raises(ValidationError, match="frozen"):
        config.operator.driver.version = "1.0"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        config.namespace = "other"  # type: ignore[misc]
    assert all(model.model_config.get("frozen") for model in ALL_MODELS)


@pytest.mark.parametrize(
    "document, path",
    [
        ({"operator": {"driver": {"verison": "1"}}}, ("operator", "driver", "verison")),
        ({"operator": {"devicePlugin": {"config": {"nmae": "x"}}}}, ("operator", "devicePlugin", "config", "nmae")),
        ({"clustr": {}}, ("clustr",)),
        (
            {"configs": {"devicePlugin": {"a": {"flags": {"migStrat": "none"}}}}},
            ("configs", "devicePlugin", "a", "flags", "migStrat"),
        ),
    ],
)
def test_unknown_keys_are_rejected(document: dict[str, Any], path: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError) as caught:
        GpuStackConfig.model_validate(document)
    (error,) = caught.value.errors()
    assert (error["type"], error["loc"]) == ("extra_forbidden", path)
    assert all(model.model_config.get("extra") == "forbid" for model in ALL_MODELS)


# keys that are not camelCase on purpose: the CRD's own snake_case field, and mig-parted's hyphenated file format
_NOT_CAMEL = {"use_ocp_driver_toolkit", "mig-configs", "mig-enabled", "mig-devices", "device-filter"}
_CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def test_aliases_are_camel_case() -> None:
    aliases = {field.alias or name for model in ALL_MODELS for name, field in model.model_fields.items()}
    assert {a for a in aliases if not _CAMEL.match(a)} == _NOT_CAMEL
    assert {"rootFS", "useNvidiaDriverCRD", "hostPID", "enablePodUID", "vfioPCI", "nodefeaturerules"} <= aliases


SHARED = {"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 4}]}}}


def test_camel_case_document_round_trips() -> None:
    document = {
        "operator": {
            "devicePlugin": {"config": {"name": "plugin-config", "default": "shared"}},
            "driver": {"upgradePolicy": {"podDeletion": {"deleteEmptyDir": True}}, "useNvidiaDriverCRD": False},
            "hostPaths": {"rootFS": "/host"},
            "operator": {"use_ocp_driver_toolkit": False},
        },
        "configs": {"devicePlugin": {"shared": SHARED}},
    }
    config = parse_config(document)
    assert config.operator.driver.upgrade_policy.pod_deletion.delete_empty_dir is True
    assert config.operator.host_paths.root_fs == "/host"
    assert parse_config(config.to_document()) == config
    dumped = config.to_document(exclude_defaults=True)
    assert dumped["operator"]["hostPaths"] == {"rootFS": "/host"}
    assert dumped["operator"]["driver"] == {"upgradePolicy": {"podDeletion": {"deleteEmptyDir": True}}}
