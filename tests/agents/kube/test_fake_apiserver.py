"""The fake API server's own rules (selectors, patches, paths), so tests built on it can trust it."""

from __future__ import annotations

import pytest

from tests.agents.kube.fake_apiserver import (
    FakeApiServer,
    _Rejected,
    field_matcher,
    json_patch,
    label_matcher,
    merge_patch,
)


def labelled(**labels: str) -> dict:
    return {"metadata": {"labels": labels}, "spec": {"nodeName": "n1"}}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=a", True),
        ("app==a,tier=gpu", True),
        ("app!=a", False),
        ("app in (b, a)", True),
        ("app notin (a)", False),
        ("tier", True),
        ("!tier", False),
        ("!missing", True),
        ("", True),
    ],
)
def test_label_selectors(selector: str, expected: bool) -> None:
    assert label_matcher(selector)(labelled(app="a", tier="gpu")) is expected


def test_field_selectors() -> None:
    assert field_matcher("spec.nodeName=n1")(labelled()) is True
    assert field_matcher("spec.nodeName!=n1")(labelled()) is False
    assert field_matcher("metadata.name=x")(labelled()) is False
    with pytest.raises(_Rejected):
        field_matcher("spec.nodeName")


def test_patches() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None, "d": 3}, "l": [2]}) == {
        "a": {"c": 2, "d": 3},
        "l": [2],
    }
    document = {"metadata": {"labels": {"a/b": "1"}}, "items": [1, 2]}
    patched = json_patch(
        document,
        [
            {"op": "test", "path": "/metadata/labels/a~1b", "value": "1"},
            {"op": "add", "path": "/items/-", "value": 3},
            {"op": "replace", "path": "/items/0", "value": 0},
            {"op": "copy", "from": "/items/1", "path": "/first"},
            {"op": "move", "from": "/first", "path": "/second"},
            {"op": "remove", "path": "/metadata/labels/a~1b"},
        ],
    )
    assert patched == {"metadata": {"labels": {}}, "items": [0, 2, 3], "second": 2}
    assert document["items"] == [1, 2]
    with pytest.raises(_Rejected, match="test operation failed"):
        json_patch(document, [{"op": "test", "path": "/items/0", "value": 9}])


def test_unknown_resources_and_scopes_are_not_found() -> None:
    server = FakeApiServer()
    with pytest.raises(_Rejected, match="could not find"):
        server._target("/apis/example.com/v1/widgets")
    with pytest.raises(_Rejected, match="could not find"):
        server._target("/apis/gpu.pulumi-gpu-operator.io/v1alpha1/namespaces/x/gpudevices")
    with pytest.raises(_Rejected, match="could not find"):
        server._target("/api/v1/pods/p")
    target = server._target("/api/v1/namespaces/gpu-operator/pods/p/status")
    assert (target.resource.plural, target.namespace, target.name, target.subresource) == (
        "pods",
        "gpu-operator",
        "p",
        "status",
    )
    assert server._target("/api/v1/namespaces/gpu-operator").resource.plural == "namespaces"
