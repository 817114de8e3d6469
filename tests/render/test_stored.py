"""Objects in the form the API server stores: `as_stored` place by place, then every object we render or register.

The regression tests find quantities and atomic structs by the Kubernetes API schema (the OpenAPI definitions
bundled with kubernetes-validate, and the upstream CRDs), not by the key table `as_stored` uses, so a field that
table misses fails here. What the server fills into atomic structs (`ATOMIC_DEFAULTS`) and which quantity maps
its defaulting rounds up to 1m (`RESOURCE_LIST_FIELDS`) are read from k8s.io/kubernetes v1.36,
`pkg/apis/core/v1/defaults.go` (SetDefaults_ObjectFieldSelector, SetDefaults_ResourceList and its callers in the
generated `zz_generated.defaults.go`), `pkg/apis/rbac/v1/defaults.go` and `pkg/apis/resource/v1/defaults.go`; an
unset ResourceFieldSelector divisor reads back as "0" (a Quantity that is no pointer).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest
import yaml
from kubernetes_validate import utils as kv

from gpu_operator.config import load_config, parse_config
from gpu_operator.facts.quantity import QuantityError, is_canonical
from gpu_operator.render import render
from gpu_operator.render.dra import dra_objects
from gpu_operator.render.monitoring import monitoring_objects
from gpu_operator.render.network import network_objects
from gpu_operator.render.stored import as_stored
from tests.golden.cases import CASES
from tests.golden.stack_cases import STACK_ENVS
from tests.support.reference import REFERENCE_DATA
from tests.support.schemas import CRD_FILES, KUBERNETES_VERSIONS
from tests.support.stack_programs import run_stack

# as_stored, place by place: (what is rendered, what is stored)
PLACES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "container resources round up to 1m and reprint": (
        {"resources": {"requests": {"cpu": "100u", "memory": "1024Mi"}, "limits": {"memory": 2000000000}}},
        {"resources": {"requests": {"cpu": "1m", "memory": "1Gi"}, "limits": {"memory": "2G"}}},
    ),
    "the Network Operator's container resources": (
        {"containerResources": [{"name": "mofed-container", "requests": {"cpu": "1000m"}, "limits": {"memory": "6144Mi"}}]},
        {"containerResources": [{"name": "mofed-container", "requests": {"cpu": "1"}, "limits": {"memory": "6Gi"}}]},
    ),
    "an emptyDir's size limit": (
        {"volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16384Mi"}}]},
        {"volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]},
    ),
    "a RuntimeClass's overhead (no resource list defaulting: no rounding to 1m)": (
        {"overhead": {"podFixed": {"cpu": "0.0001", "memory": "1024Ki"}}},
        {"overhead": {"podFixed": {"cpu": "100u", "memory": "1Mi"}}},
    ),
    "a DRA request's capacity": (
        {"exactly": {"capacity": {"requests": {"memory": "40960Mi"}}}},
        {"exactly": {"capacity": {"requests": {"memory": "40Gi"}}}},
    ),
    "a fieldRef gets the server's apiVersion": (
        {"env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]},
        {"env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName", "apiVersion": "v1"}}}]},
    ),
    "a fieldRef keeps an apiVersion it has": (
        {"fieldRef": {"apiVersion": "v2", "fieldPath": "x"}},
        {"fieldRef": {"apiVersion": "v2", "fieldPath": "x"}},
    ),
    "a resourceFieldRef gets the divisor the server prints, and a reprinted one": (
        {"items": [{"resourceFieldRef": {"resource": "limits.cpu"}},
                   {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1024Ki"}}]},
        {"items": [{"resourceFieldRef": {"resource": "limits.cpu", "divisor": "0"}},
                   {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}]},
    ),
    "chart values": (
        {"worker": {"resources": {"limits": {"memory": "2048Mi"}}}},
        {"worker": {"resources": {"limits": {"memory": "2Gi"}}}},
    ),
    "look-alikes stay: RBAC resources, DRA requests, a map named requests elsewhere": (
        {"rules": [{"resources": ["pods"], "verbs": ["get"]}], "devices": {"requests": [{"name": "gpu"}]},
         "requests": {"cpu": "1000m"}, "resources": {"gpus": {"enabled": True}}},
        {"rules": [{"resources": ["pods"], "verbs": ["get"]}], "devices": {"requests": [{"name": "gpu"}]},
         "requests": {"cpu": "1000m"}, "resources": {"gpus": {"enabled": True}}},
    ),
}


@pytest.mark.parametrize("place", PLACES)
def test_as_stored(place: str) -> None:
    rendered, stored = PLACES[place]
    before = copy.deepcopy(rendered)
    assert as_stored(rendered) == stored
    assert rendered == before  # the input is not changed
    assert as_stored(stored) == stored  # the stored form is stored unchanged


def test_values_resolved_later_are_left_as_they_are() -> None:
    later = object()  # a Pulumi Output, say
    document = {"resources": {"limits": {"memory": later}}, "image": later}
    stored = as_stored(document)
    assert stored["resources"]["limits"]["memory"] is later and stored["image"] is later


@pytest.mark.parametrize("value", [0.5, True, "lots"])
def test_a_float_a_bool_or_text_is_no_quantity(value: object) -> None:
    with pytest.raises(QuantityError):
        as_stored({"resources": {"requests": {"cpu": value}}})


def test_a_users_resources_are_rendered_as_stored() -> None:
    document = {"operator": {"dcgmExporter": {"resources": {"limits": {"memory": "1024Mi"}}}}}
    [exporter] = [o for o in render(parse_config(document)) if o["kind"] == "DaemonSet"
                  and o["metadata"]["name"] == "nvidia-dcgm-exporter"]
    [container] = exporter["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"] == {"memory": "1Gi"}


# every object we render, checked against the API schema

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
#: (definition, property) of the quantity maps the server's defaulting rounds up to 1m (SetDefaults_ResourceList).
RESOURCE_LIST_FIELDS = frozenset({
    ("io.k8s.api.core.v1.ResourceRequirements", "limits"),
    ("io.k8s.api.core.v1.ResourceRequirements", "requests"),
    ("io.k8s.api.core.v1.VolumeResourceRequirements", "limits"),
    ("io.k8s.api.core.v1.VolumeResourceRequirements", "requests"),
    ("io.k8s.api.core.v1.PodSpec", "overhead"),
})


def _exact_request(request: dict[str, Any]) -> list[str]:
    problems = [] if request.get("allocationMode") else ["allocationMode left to the server (ExactCount)"]
    if request.get("allocationMode", "ExactCount") == "ExactCount" and "count" not in request:
        problems.append("count left to the server (1)")
    return problems


def _subject(subject: dict[str, Any]) -> list[str]:
    if subject.get("kind") in ("User", "Group") and subject.get("apiGroup") != "rbac.authorization.k8s.io":
        return ["apiGroup left to the server (rbac.authorization.k8s.io)"]
    return []


#: Atomic structs (applied as a whole) and what the server fills into them: each check lists what we leave out.
ATOMIC_DEFAULTS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "io.k8s.api.core.v1.ObjectFieldSelector":
        lambda ref: [] if ref.get("apiVersion") == "v1" else ["apiVersion is not the server's v1"],
    "io.k8s.api.core.v1.ResourceFieldSelector":
        lambda ref: [] if "divisor" in ref else ["divisor left to the server (\"0\")"],
    "io.k8s.api.resource.v1.ExactDeviceRequest": _exact_request,
    "io.k8s.api.resource.v1.DeviceSubRequest": _exact_request,
    "io.k8s.api.rbac.v1.Subject": _subject,
    "io.k8s.api.rbac.v1.RoleRef": lambda ref: [] if ref.get("apiGroup") else ["apiGroup left to the server"],
}


@cache
def _definitions() -> dict[str, Any]:
    version = [v for v in kv.all_versions() if kv.major_minor(v) <= KUBERNETES_VERSIONS[-1]][-1]
    return {"dir": f"v{version}-local-strict", "version": version,
            "defs": kv.schema_contents(f"kubernetes-json-schema/v{version}-local-strict/_definitions.json",
                                       version)["$defs"]}


def _builtin_schema(obj: dict[str, Any]) -> dict[str, Any] | None:
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", obj["apiVersion"])
    found = _definitions()
    try:
        return kv.schema_contents(f"kubernetes-json-schema/{found['dir']}/{obj['kind'].lower()}-{group}.json",
                                  found["version"])
    except FileNotFoundError:
        return None


@cache
def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for relative in CRD_FILES:
        for crd in yaml.safe_load_all((REFERENCE_DATA / relative).read_text()):
            if crd and crd.get("kind") == "CustomResourceDefinition":
                for version in crd["spec"]["versions"]:
                    key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
                    schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


def _is_crd_quantity(schema: dict[str, Any]) -> bool:
    return bool(schema.get("x-kubernetes-int-or-string")) and "[KMGTPE]i" in schema.get("pattern", "")


def _walk(value: Any, schema: dict[str, Any], path: str, owner: tuple[str, str]) -> Iterator[str]:
    """Problems of `value` against its schema node; `owner` is (enclosing definition, property)."""
    definitions = _definitions()["defs"]
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name == QUANTITY:
            resource_list = owner in RESOURCE_LIST_FIELDS
            if not is_canonical(value, resource_list=resource_list):
                yield f"{path}: quantity {value!r} is not what the server stores"
            return
        if name in ATOMIC_DEFAULTS and isinstance(value, dict):
            yield from (f"{path}: {problem}" for problem in ATOMIC_DEFAULTS[name](value))
        yield from _walk(value, definitions[name], path, (name, owner[1]))
        return
    if _is_crd_quantity(schema):
        if not is_canonical(value):
            yield f"{path}: quantity {value!r} is not what the server stores"
        return
    if isinstance(value, dict):
        for key, item in value.items():
            node = schema.get("properties", {}).get(key)
            if node is None and isinstance(schema.get("additionalProperties"), dict):
                node = schema["additionalProperties"]
                key_owner = owner
            else:
                key_owner = (owner[0], key)
            if node is not None:
                yield from _walk(item, node, f"{path}.{key}", key_owner)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            yield from _walk(item, schema["items"], f"{path}[{index}]", owner)


def problems_of(obj: dict[str, Any]) -> list[str]:
    """What differs in `obj` from the form the API server stores (by the API schema of its kind)."""
    schema = _builtin_schema(obj) or _crd_schemas().get((obj["apiVersion"], obj["kind"]))
    if schema is None:
        return [f"no schema for {obj['apiVersion']} {obj['kind']}: cannot check it"]
    label = f"{obj['kind']}/{obj['metadata'].get('name')}"
    return list(_walk(obj, schema, label, ("", "")))


def _rendered(case: str) -> list[dict[str, Any]]:
    config = load_config(CASES[case])
    return [*render(config), *network_objects(config), *dra_objects(config), *monitoring_objects(config)]


@pytest.mark.parametrize("case", CASES)
def test_every_rendered_object_is_what_the_server_stores(case: str) -> None:
    objects = _rendered(case)
    assert objects
    assert [problem for obj in objects for problem in problems_of(obj)] == []


def test_the_check_sees_what_the_server_changes() -> None:
    """The schema walk finds each kind of difference (so a clean result above means something)."""
    [exporter] = [o for o in _rendered("default") if o["kind"] == "DaemonSet"
                  and o["metadata"]["name"] == "nvidia-dcgm-exporter"]
    broken = copy.deepcopy(exporter)
    pod = broken["spec"]["template"]["spec"]
    [container] = pod["containers"]
    container["resources"]["limits"]["memory"] = "1024Mi"
    container["resources"]["requests"]["cpu"] = "100u"
    container["env"].append({"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}})
    container["env"].append({"name": "Y", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}})
    pod["volumes"].append({"name": "scratch", "emptyDir": {"sizeLimit": "0.5Gi"}})
    found = "\n".join(problems_of(broken))
    for expected in ("'1024Mi'", "'100u'", "apiVersion is not the server's v1", "divisor left to the server",
                     "sizeLimit: quantity '0.5Gi'"):
        assert expected in found


@pytest.mark.parametrize("env", STACK_ENVS)
def test_every_registered_object_is_what_the_server_stores(env: str) -> None:
    """What the stacks register under mocks, after the components had their say (the agents image, await
    annotations), and the charts' values."""
    registrations = run_stack(env).recording.registrations
    objects = [r.inputs for r in registrations if r.type.startswith("kubernetes:") and "metadata" in r.inputs]
    assert objects
    assert [problem for obj in objects for problem in problems_of(obj)] == []
    for chart in (r for r in registrations if r.type == "kubernetes:helm.sh/v4:Chart"):
        values = chart.inputs.get("values") or {}
        assert as_stored(values) == values
