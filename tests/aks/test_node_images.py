"""Which Ubuntu release AKS gives a node: OS SKU and Kubernetes version."""

from __future__ import annotations

import pytest

from gpu_operator.aks.node_images import UBUNTU_2404_FROM, kubernetes_minor, ubuntu_release


@pytest.mark.parametrize("os_sku, version, release", [
    ("Ubuntu", "1.25", "22.04"),
    ("Ubuntu", "1.34", "22.04"),
    ("Ubuntu", "1.34.7", "22.04"),
    ("Ubuntu", "1.35", "24.04"),
    ("Ubuntu", "1.36.1", "24.04"),
    ("Ubuntu2204", "1.35", "22.04"),
    ("Ubuntu2204", None, "22.04"),
    ("Ubuntu", None, None),
])
def test_release(os_sku: str, version: str | None, release: str | None) -> None:
    assert ubuntu_release(os_sku, version) == release  # type: ignore[arg-type]


def test_cut_over_is_kubernetes_1_35() -> None:
    assert UBUNTU_2404_FROM == 35


def test_versions() -> None:
    assert kubernetes_minor("1.34") == 34
    assert kubernetes_minor("1.35.2") == 35
    with pytest.raises(ValueError):
        kubernetes_minor("v1.34")
