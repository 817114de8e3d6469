"""Helm's values merge: mappings merge recursively, lists and scalars are replaced, inputs untouched."""

from gpu_operator.render.helm_chart import merge_values


def test_merge_values_layers_like_helm() -> None:
    base = {"nfd": {"enabled": True, "worker": {"tolerations": [{"key": "a"}]}}, "image": "x"}
    overrides = {"nfd": {"worker": {"tolerations": [{"key": "b"}]}, "extra": 1}, "image": None}
    merged = merge_values(base, overrides)
    assert merged == {"nfd": {"enabled": True, "worker": {"tolerations": [{"key": "b"}]}, "extra": 1}, "image": None}
    assert base["nfd"]["worker"]["tolerations"] == [{"key": "a"}]
    merged["nfd"]["extra"] = 2
    assert overrides["nfd"]["extra"] == 1
