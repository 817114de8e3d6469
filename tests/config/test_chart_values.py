"""`nfd.values`, `network.values`, `dra.values`: typed against the charts' own values, merged with ours.

The typed keys are checked against the published charts (`../shared/reference/charts/`): NFD 0.19.0's
`values.schema.json` (its `properties` and `$ref`s to the Kubernetes definitions), and the network-operator 26.4.1
and dra-driver-nvidia-gpu 0.4.1 `values.yaml` defaults. A property test feeds random JSON-shaped values into every
free-form map of the config and requires: accepted or refused as bad input (never an internal error), and an
accepted config renders objects that pass the strict schema validation.
"""

from __future__ import annotations

import json
import tarfile
from functools import cache
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.chart_values import (
    DRA_TOP_LEVEL_KEYS,
    DRA_VALUES,
    NETWORK_VALUES,
    NFD_VALUES,
    ChartValues,
)
from gpu_operator.render import render_operands
from gpu_operator.render.dra import render_dra
from gpu_operator.render.network import render_network
from gpu_operator.render.nfd import nfd_chart
from gpu_operator.render.stack import stack_objects
from tests.support.reference import reference_chart
from tests.support.schemas import validate_objects

AKS = {"resourceGroup": "rg", "clusterName": "c", "kubernetesVersion": "1.34"}
DRA_POOL = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "gpuAllocation": "dra", "taints": ["sku=gpu:NoSchedule"]}
IB_POOL = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "taints": ["sku=gpu:NoSchedule"]}
T4_POOL = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "taints": ["sku=gpu:NoSchedule"]}
POOL_TOLERATION = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
MINE = {"key": "team", "operator": "Exists", "effect": "NoSchedule"}


@cache
def _chart_file(archive: str, member: str) -> Any:
    with tarfile.open(reference_chart(archive)) as tar:
        data = tar.extractfile(member)
        assert data is not None
        text = data.read().decode()
    return json.loads(text) if member.endswith(".json") else yaml.safe_load(text)


def _default_at(values: dict[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    node: Any = values
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


#: what a typed key's shape accepts, by the check's function name, as JSON Schema types
_SCHEMA_TYPES = {"_tolerations": "array", "_node_selector": "object", "_affinity": "object", "_resources": "object",
                 "_image": "object", "_mapping": "object", "_mapping_or_null": "object", "_string": "string", "_host_path": "string", "_optional_host_path": "string",
                 "_boolean": "boolean", "_string_list": "array"}
_PYTHON_TYPES = {"array": list, "object": dict, "string": str, "boolean": bool}


def _schema_node(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    node: dict[str, Any] | None = schema
    for part in path:
        node = ((node or {}).get("properties") or {}).get(part)
    return node


def test_every_typed_nfd_key_is_in_the_charts_schema_with_that_type() -> None:
    """node-feature-discovery 0.19.0 values.schema.json: each key we type exists there with the same JSON type."""
    schema = _chart_file("node-feature-discovery-0.19.0.tgz", "node-feature-discovery/values.schema.json")
    for path, shape in NFD_VALUES.shapes.items():
        node = _schema_node(schema, path)
        assert node is not None, path
        declared = node.get("type")
        declared = declared if isinstance(declared, list) else [declared]
        wanted = _SCHEMA_TYPES[shape.__name__]
        assert wanted in declared or (declared == [None] and "$ref" in node), (path, declared)
        if shape.__name__ == "_tolerations":
            assert "Toleration" in json.dumps(node), path


@pytest.mark.parametrize(("values", "archive", "member", "prefix"), [
    (NETWORK_VALUES, "network-operator-26.4.1.tgz", "network-operator/values.yaml", ()),
    (DRA_VALUES, "dra-driver-nvidia-gpu-0.4.1.tgz", "dra-driver-nvidia-gpu/values.yaml", ()),
], ids=["network-operator", "dra-driver-nvidia-gpu"])
def test_typed_keys_the_chart_sets_have_its_defaults_shape(
    values: ChartValues, archive: str, member: str, prefix: tuple[str, ...]
) -> None:
    """The chart's values.yaml defaults pass our shapes, and every typed key the chart defaults is of that type."""
    defaults = _chart_file(archive, member)
    for path, shape in values.shapes.items():
        found, default = _default_at(defaults, path)
        if found and default is not None:
            assert isinstance(default, _PYTHON_TYPES[_SCHEMA_TYPES[shape.__name__]]), (path, default)
            assert shape(default, ".".join(path)) == [], path


def test_the_dra_top_level_keys_are_the_charts() -> None:
    """dra-driver-nvidia-gpu 0.4.1 values.yaml: its top-level keys, exactly."""
    assert set(_chart_file("dra-driver-nvidia-gpu-0.4.1.tgz", "dra-driver-nvidia-gpu/values.yaml")) == DRA_TOP_LEVEL_KEYS


def test_user_tolerations_are_added_to_the_pool_taints_never_in_their_place() -> None:
    """The docs' promise (docs/tasks/aks-gpu-pools.md): every pool taint is tolerated by the NFD worker, the Network Operator and the DRA
    kubelet plugin, whatever tolerations `values` adds (a Helm list would replace the list)."""
    network = parse_config({"aks": AKS, "pools": [IB_POOL], "network": {"values": {
        "operator": {"tolerations": [MINE]}, "node-feature-discovery": {"worker": {"tolerations": [MINE]}}}}})
    values = render_network(network).chart.values
    for tolerations in (values["operator"]["tolerations"], values["node-feature-discovery"]["worker"]["tolerations"]):
        assert POOL_TOLERATION in tolerations and MINE in tolerations
    dra = parse_config({"aks": AKS, "pools": [DRA_POOL], "dra": {"values": {"kubeletPlugin": {"tolerations": [MINE]}}}})
    plugin = render_dra(dra).chart.values["kubeletPlugin"]["tolerations"]
    assert POOL_TOLERATION in plugin and MINE in plugin
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in plugin
    nfd = nfd_chart(parse_config({"aks": AKS, "pools": [T4_POOL], "nfd": {"values": {"worker": {"tolerations": [MINE]}}}}))
    assert nfd is not None
    worker = nfd.values["worker"]["tolerations"]
    assert POOL_TOLERATION in worker and MINE in worker


# --- the property: random JSON-shaped values anywhere free-form -------------------------------------------------

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 300), st.text(max_size=6),
                     st.sampled_from(["NoSchedule", "Exists", "Equal", "sku", "1Gi", "500m", "true"]))
_KEYS = st.sampled_from(["worker", "master", "gc", "operator", "kubeletPlugin", "controller", "tolerations",
                         "nodeSelector", "affinity", "resources", "image", "limits", "requests", "key", "operator",
                         "effect", "value", "config", "nfd", "enabled", "node-feature-discovery", "repository",
                         "tag", "gpus", "nodeAffinity", "x", "cpu"])
_JSON = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(_KEYS, inner, max_size=3)), max_leaves=12)
_MAP = st.dictionaries(_KEYS, _JSON, max_size=3)
_LABELS = st.dictionaries(st.sampled_from(["team", "a.b/c", "x y", ""]), _SCALARS, max_size=2)


def _document(where: str, value: Any) -> dict[str, Any]:
    """A document with `value` at one free-form place (pools on, so the network and DRA charts are installed)."""
    # an InfiniBand pool brings the Network Operator, whose NFD replaces ours: the NFD case gets a T4 pool
    pools = [dict(T4_POOL)] if where == "nfd" else [dict(IB_POOL), {**DRA_POOL, "name": "dra"}]
    document: dict[str, Any] = {"aks": dict(AKS), "pools": pools}
    if where in ("nfd", "network", "dra"):
        document[where] = {"values": value}
    elif where == "aks.tags":
        document["aks"]["tags"] = value
    elif where in ("labels", "tags"):
        pools[0][where] = value
    elif where in ("ruleLabels", "monitorLabels"):
        document["monitoring"] = {where: value}
    else:  # daemonsets.labels, daemonsets.annotations
        document["operator"] = {"daemonsets": {where.removeprefix("daemonsets."): value}}
    return document


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=st.sampled_from(["nfd", "network", "dra", "aks.tags", "labels", "tags", "ruleLabels", "monitorLabels",
                              "daemonsets.labels", "daemonsets.annotations"]),
       value=st.one_of(_MAP, _LABELS, _JSON))
@example(where="nfd", value={"worker": {"tolerations": {"key": "a"}}})  # crashed the render (TypeError)
@example(where="nfd", value={"worker": {"tolerations": ["sku=gpu:NoSchedule"]}})  # reached the chart as strings
@example(where="network", value={"operator": {"tolerations": [{"key": "team", "operator": "Exists"}]}})  # replaced
@example(where="dra", value={"kubeletPlugin": {"tolerations": [{"key": "team", "operator": "Exists"}]}})  # replaced
def test_any_json_in_a_free_form_map_is_bad_input_or_a_valid_render(where: str, value: Any) -> None:
    try:
        config = parse_config(_document(where, value))
    except ConfigError as error:  # the CLI's exit 2: every problem names a key of the document
        assert error.problems and all(p.path or p.message for p in error.problems)
        return
    objects = stack_objects(config, render_operands(config))
    network, dra = render_network(config), render_dra(config)
    if where == "nfd":
        charts = {"nfd": nfd_chart(config)}
    else:
        assert network is not None and dra is not None
        charts = {"network": network.chart, "dra": dra.chart}
    for name, chart in charts.items():
        assert chart is not None, name
        json.dumps(chart.values)  # plain data
        for path in _WRITTEN_TOLERATIONS[name]:
            tolerations = _at(chart.values, path)
            assert isinstance(tolerations, list) and all(isinstance(t, dict) for t in tolerations), (path, tolerations)
            assert POOL_TOLERATION in tolerations, (path, tolerations)  # the docs' promise: pool taints tolerated
    assert validate_objects(objects, versions=("1.34",)) == []


#: the toleration lists the stack writes into each chart's values
_WRITTEN_TOLERATIONS = {
    "nfd": [("worker", "tolerations")],
    "network": [("operator", "tolerations"), ("node-feature-discovery", "worker", "tolerations")],
    "dra": [("kubeletPlugin", "tolerations")],
}


def _at(values: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = values
    for part in path:
        node = node[part]
    return node
