"""Which Ubuntu release an AKS Linux node runs, from the pool's OS SKU and Kubernetes version.

The GPU operator's driver image is built per OS release (`driver:<version>-ubuntu22.04`), so the release of the
node image must be known before the nodes exist. AKS decides it from the pool's `osSKU`: `Ubuntu2204` pins
Ubuntu 22.04; plain `Ubuntu` follows the Kubernetes version of the pool, Ubuntu 22.04 for Kubernetes 1.25 to 1.34
and Ubuntu 24.04 from Kubernetes 1.35 on (AKS FAQ, "What OS versions are supported"). Azure Linux is not offered:
AKS does not support it on the A100/H100 GPU sizes.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["OsSku", "UbuntuRelease", "ubuntu_release", "kubernetes_minor", "KUBERNETES_VERSION", "UBUNTU_2404_FROM"]

OsSku = Literal["Ubuntu", "Ubuntu2204"]
UbuntuRelease = Literal["22.04", "24.04"]

#: `1.34` or `1.34.2`, as AKS accepts for `kubernetesVersion` and `orchestratorVersion`.
KUBERNETES_VERSION = re.compile(r"^1\.([0-9]+)(\.[0-9]+)?\Z")
#: The first Kubernetes minor version whose `Ubuntu` node image is Ubuntu 24.04.
UBUNTU_2404_FROM = 35

_PINNED: dict[str, UbuntuRelease] = {"Ubuntu2204": "22.04"}


def kubernetes_minor(version: str) -> int:
    """The minor version of a `1.<minor>[.<patch>]` Kubernetes version."""
    match = KUBERNETES_VERSION.match(version)
    if match is None:
        raise ValueError(f"{version!r} is not a Kubernetes version such as '1.34' or '1.34.2'")
    return int(match.group(1))


def ubuntu_release(os_sku: OsSku, kubernetes_version: str | None) -> UbuntuRelease | None:
    """The Ubuntu release of the node image; None when it depends on a Kubernetes version that is not known."""
    if os_sku in _PINNED:
        return _PINNED[os_sku]
    if kubernetes_version is None:
        return None
    return "24.04" if kubernetes_minor(kubernetes_version) >= UBUNTU_2404_FROM else "22.04"
