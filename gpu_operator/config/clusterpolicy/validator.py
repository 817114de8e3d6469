"""The `validator` section: the image and per-check settings of the operator validator.

The validator has no `enabled` switch: it always runs, and its checks gate every other operand through the
status files under `/run/nvidia/validations`.
"""

from __future__ import annotations

from pydantic import Field

from gpu_operator.config.clusterpolicy.common import EnvOnly, ImageFields
from gpu_operator.config.kube import EnvList, ResourceRequirements

__all__ = ["ValidatorSpec"]


class ValidatorSpec(ImageFields):
    """Settings of `nvidia-operator-validator` and of every `*-validation` init container."""

    repository: str = "nvcr.io/nvidia"
    image: str = "gpu-operator"
    version: str = "v26.7.0"
    args: tuple[str, ...] = ()
    env: EnvList = ()
    resources: ResourceRequirements | None = None
    host_network: bool = False
    driver: EnvOnly = EnvOnly()
    toolkit: EnvOnly = EnvOnly()
    cuda: EnvOnly = EnvOnly()
    plugin: EnvOnly = EnvOnly()
    vfio_pci: EnvOnly = Field(default=EnvOnly(), alias="vfioPCI")
    vgpu_manager: EnvOnly = EnvOnly()
    vgpu_devices: EnvOnly = EnvOnly()
