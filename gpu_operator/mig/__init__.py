"""MIG (Multi-Instance GPU) knowledge shared by the renderer and the MIG manager agent.

* :mod:`~gpu_operator.mig.catalog`: MIG-capable GPU models, their PCI ids and MIG profiles (data);
* :mod:`~gpu_operator.mig.default_config`: the default mig-parted config generated from that catalog;
* :mod:`~gpu_operator.mig.matching`: which layout of a named config applies to a GPU;
* :mod:`~gpu_operator.mig.clients`: the host services that must stop while MIG mode changes.

Pure data and pure functions: no Pulumi, no Kubernetes, no NVML.
"""

from gpu_operator.mig.catalog import GPU_MODELS, LEGACY_PROFILES, GpuModel, MigGeometry, model_by_pci_id
from gpu_operator.mig.clients import DEFAULT_GPU_CLIENTS, gpu_clients_document
from gpu_operator.mig.default_config import config_name, default_config, to_yaml
from gpu_operator.mig.matching import layouts_for

__all__ = [
    "DEFAULT_GPU_CLIENTS",
    "GPU_MODELS",
    "LEGACY_PROFILES",
    "GpuModel",
    "MigGeometry",
    "config_name",
    "default_config",
    "gpu_clients_document",
    "layouts_for",
    "model_by_pci_id",
    "to_yaml",
]
