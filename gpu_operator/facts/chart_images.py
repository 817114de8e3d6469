"""The images the Helm charts the stack installs pull by default, and the values that name them.

Read from the charts as published (node-feature-discovery 0.19.0, network-operator 26.4.1, dra-driver-nvidia-gpu
0.4.1; their `values.yaml` and the templates that compose each image): an image is `<repository>[/<name>]:<tag>`
from those values, and a tag left empty is the chart's appVersion (the DRA driver's with a `v` in front). The
Network Operator chart's SR-IOV and maintenance operators are off in the stack's values, so their images are not
pulled. `gpu-operator images` lists these beside the stack's own, and a `registry` mirror rewrites their
repository values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CHART_IMAGES", "ChartImage"]

Path = tuple[str, ...]


@dataclass(frozen=True)
class ChartImage:
    """One image of a chart: what runs it, the values that compose it and their defaults."""

    what: str
    repository: Path
    default_repository: str
    tag: Path
    default_tag: str
    name: Path | None = None
    default_name: str = ""

    @staticmethod
    def _get(values: Mapping[str, Any], path: Path) -> Any:
        for key in path:
            values = values.get(key) if isinstance(values, Mapping) else None  # type: ignore[assignment]
        return values

    def reference(self, values: Mapping[str, Any]) -> str:
        """The image these values make the chart pull."""
        repository = self._get(values, self.repository) or self.default_repository
        name = (self._get(values, self.name) or self.default_name) if self.name is not None else ""
        tag = self._get(values, self.tag) or self.default_tag
        return f"{repository}/{name}:{tag}" if name else f"{repository}:{tag}"


#: Chart name → the images it pulls.
CHART_IMAGES: dict[str, tuple[ChartImage, ...]] = {
    "node-feature-discovery": (
        ChartImage("NFD master, worker and gc", ("image", "repository"), "registry.k8s.io/nfd/node-feature-discovery",
                   ("image", "tag"), "v0.19.0"),
    ),
    "network-operator": (
        ChartImage("Network Operator", ("operator", "repository"), "nvcr.io/nvidia/cloud-native",
                   ("operator", "tag"), "v26.4.1", ("operator", "image"), "network-operator"),
        ChartImage("DOCA-OFED driver pods' init container", ("operator", "ofedDriver", "initContainer", "repository"),
                   "nvcr.io/nvidia/mellanox", ("operator", "ofedDriver", "initContainer", "version"),
                   "network-operator-v26.4.1", ("operator", "ofedDriver", "initContainer", "image"),
                   "network-operator-init-container"),
        ChartImage("the Network Operator's NFD", ("node-feature-discovery", "image", "repository"),
                   "nvcr.io/nvidia/mellanox/node-feature-discovery", ("node-feature-discovery", "image", "tag"),
                   "network-operator-v26.4.1"),
    ),
    "dra-driver-nvidia-gpu": (
        ChartImage("DRA driver controller and kubelet plugin", ("image", "repository"),
                   "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu", ("image", "tag"), "v0.4.1"),
    ),
}
