"""`registry`: one setting moves every image and chart the stack pulls to a mirror, keeping each one's path.

Checked on the render itself: with the mirror, no rendered object, chart value or chart source names an upstream
registry, and each image is the upstream one with its host replaced; what is set explicitly stays."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.mirror import mirrored
from gpu_operator.render.pulled import pulled_charts, pulled_images
from gpu_operator.render import render_operands
from gpu_operator.render.stack import stack_objects

AKS = {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34.2"}
FLEET: dict[str, Any] = {
    "aks": AKS,
    "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"},
              {"name": "dra", "vmSize": "Standard_NC24ads_A100_v4", "gpuAllocation": "dra"}],
}
UPSTREAM_HOSTS = ("nvcr.io", "registry.k8s.io", "helm.ngc.nvidia.com", "docker.io")


@pytest.mark.parametrize("reference, expected", [
    ("nvcr.io/nvidia/driver:595.91.07-ubuntu22.04", "mirror.example.com:5000/gpu/nvidia/driver:595.91.07-ubuntu22.04"),
    ("registry.k8s.io/nfd/node-feature-discovery", "mirror.example.com:5000/gpu/nfd/node-feature-discovery"),
    ("vgpu-manager", "mirror.example.com:5000/gpu/vgpu-manager"),
    ("mirror.example.com:5000/gpu/nvidia/driver:1", "mirror.example.com:5000/gpu/nvidia/driver:1"),  # moved once
])
def test_a_reference_keeps_its_path_under_the_mirror(reference: str, expected: str) -> None:
    assert mirrored(reference, "mirror.example.com:5000/gpu") == expected


def _everything(config: Any) -> str:
    objects = stack_objects(config, render_operands(config))
    return json.dumps(objects) + json.dumps([chart.__dict__ for chart in pulled_charts(config)]) + \
        json.dumps([image.reference for image in pulled_images(config)])


def test_nothing_is_pulled_from_upstream_with_a_mirror() -> None:
    plain, mirrored_config = parse_config(FLEET), parse_config({**FLEET, "registry": "mirror.example.com"})
    assert any(host in _everything(plain) for host in UPSTREAM_HOSTS)
    text = _everything(mirrored_config)
    assert [host for host in UPSTREAM_HOSTS if host in text] == []
    sources, targets = pulled_images(plain), pulled_images(mirrored_config)
    assert [mirrored(s.reference, "mirror.example.com") for s in sources] == [t.reference for t in targets]
    assert {c.name: c.origin for c in pulled_charts(mirrored_config)} == {
        "network-operator": "oci://mirror.example.com/nvidia/network-operator",
        "dra-driver-nvidia-gpu": "oci://mirror.example.com/dra-driver-nvidia/charts/dra-driver-nvidia-gpu",
    }


def test_the_nfd_chart_and_its_image_move_too() -> None:
    config = parse_config({"registry": "mirror.example.com"})
    [chart] = pulled_charts(config)
    assert chart.origin == "oci://mirror.example.com/nfd/charts/node-feature-discovery"
    assert "mirror.example.com/nfd/node-feature-discovery:v0.19.0" in [i.reference for i in pulled_images(config)]


def test_what_is_set_explicitly_stays() -> None:
    config = parse_config({
        "registry": "mirror.example.com",
        "agents": {"image": {"repository": "myregistry.azurecr.io/gpu-operator-agents", "tag": "1.0.0"}},
        "nfd": {"chart": {"oci": "oci://charts.example.com/nfd"},
                "values": {"image": {"repository": "other.example.com/nfd"}}},
    })
    images = [i.reference for i in pulled_images(config)]
    assert "myregistry.azurecr.io/gpu-operator-agents:1.0.0" in images  # yours: never moved
    assert "other.example.com/nfd:v0.19.0" in images
    assert [c.origin for c in pulled_charts(config)] == ["oci://charts.example.com/nfd/node-feature-discovery"]


def test_moving_a_config_twice_moves_it_once() -> None:
    once = parse_config({"registry": "mirror.example.com/gpu"})
    assert parse_config(once) == once


@pytest.mark.parametrize("registry", ["nvidia", "https://mirror.example.com", "mirror.example.com/UPPER"])
def test_a_registry_that_is_no_host_is_refused(registry: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"registry": registry})
    [problem] = raised.value.problems
    assert problem.path == "registry"
