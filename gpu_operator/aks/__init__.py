"""Facts about Azure Kubernetes Service that GPU node pools depend on; data and pure functions only.

* :mod:`~gpu_operator.aks.vm_sizes`: the GPU VM sizes, with their GPUs, MIG capability and InfiniBand NICs;
* :mod:`~gpu_operator.aks.node_images`: which Ubuntu release a node runs, from OS SKU and Kubernetes version;
* :mod:`~gpu_operator.aks.features`: subscription features such as `AKSInfinibandSupport`.
"""

from gpu_operator.aks.features import INFINIBAND_SUPPORT, SubscriptionFeature
from gpu_operator.aks.node_images import OsSku, UbuntuRelease, ubuntu_release
from gpu_operator.aks.vm_sizes import VM_SIZES, Gpu, GpuHardware, GpuVmSize, Infiniband, vm_size

__all__ = [
    "INFINIBAND_SUPPORT",
    "VM_SIZES",
    "Gpu",
    "GpuHardware",
    "GpuVmSize",
    "Infiniband",
    "OsSku",
    "SubscriptionFeature",
    "UbuntuRelease",
    "ubuntu_release",
    "vm_size",
]
