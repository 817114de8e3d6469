"""Host GPU clients: systemd services that hold the GPU open and must stop while MIG mode changes.

The MIG manager reads this list (`GPU_CLIENTS_FILE`, `version: v1` plus `systemd-services`) and, when the driver
runs on the host, stops these services before it switches MIG mode and starts them again afterwards. The
default names NVIDIA's DGX services: NVSM, the legacy peer-memory module service, and host DCGM.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Sequence

__all__ = ["DEFAULT_GPU_CLIENTS", "gpu_clients_document"]

DEFAULT_GPU_CLIENTS: tuple[str, ...] = (
    "nvsm.service",
    "nvsm-mqtt.service",
    "nvsm-core.service",
    "nvsm-api-gateway.service",
    "nvsm-notifier.service",
    "nv_peer_mem.service",
    "nvidia-dcgm.service",
    "dcgm.service",
    "dcgm-exporter.service",
)


def gpu_clients_document(services: Sequence[str] = DEFAULT_GPU_CLIENTS) -> dict[str, Any]:
    """The clients file as a document: `{version: v1, systemd-services: [...]}`."""
    return {"version": "v1", "systemd-services": list(services)}
