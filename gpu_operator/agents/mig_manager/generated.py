"""The config the MIG manager generates from the node's GPUs when no config file is given.

It holds `all-disabled`, `all-enabled`, `all-<profile>` for every profile the GPUs offer and `all-balanced`
where the catalog has a balanced mix, for the catalog models whose PCI ids are on the node. A GPU the catalog
does not know gets `all-<profile>` layouts from its own NVML profiles (the most instances of each that fit).
"""

from __future__ import annotations

from typing import Any

from gpu_operator.agents.mig_manager.hardware import MigHardware
from gpu_operator.mig import default_config, model_by_pci_id
from gpu_operator.mig.default_config import config_name

__all__ = ["generated_config"]


def generated_config(hardware: MigHardware) -> dict[str, Any]:
    gpus = [g for g in hardware.gpus() if g.capable]
    models = []
    for gpu in gpus:
        model = model_by_pci_id(gpu.pci_id)
        if model is not None and model not in models:
            models.append(model)
    document = default_config(models, legacy={})
    configs: dict[str, list[dict[str, Any]]] = document["mig-configs"]
    for gpu in gpus:
        if model_by_pci_id(gpu.pci_id) is not None:
            continue
        for profile in hardware.profiles(gpu.index).values():
            layout = {
                "device-filter": gpu.pci_id,
                "devices": "all",
                "mig-enabled": True,
                "mig-devices": {profile.name: profile.instances},
            }
            entries = configs.setdefault(config_name(profile.name), [])
            if layout not in entries:
                entries.append(layout)
    return document
