"""The GPU operator validator: proof, node by node, that each layer of the GPU stack works.

`gpu-operator-agent validator` replaces NVIDIA's `nvidia-validator` in the operator's validation init
containers and reads the same environment (`COMPONENT`, `WITH_WAIT`, `WITH_WORKLOAD`, `NODE_NAME`,
`OPERATOR_NAMESPACE`, ...). Each run checks one component - the driver, the container toolkit, CUDA, the device
plugin, MOFED or a GPUDirect module - and on success (re)creates that component's status file under
`/run/nvidia/validations`, which the other operands' init containers wait for. The driver and toolkit are
checked through the shared NVML layer; CUDA and the device plugin by running NVIDIA's workload pods through the
shared Kubernetes client.
"""

from gpu_operator.agents.validator.command import main, run
from gpu_operator.agents.validator.components import COMPONENTS
from gpu_operator.agents.validator.context import Context, Timing
from gpu_operator.agents.validator.errors import ValidationFailed
from gpu_operator.agents.validator.paths import Paths
from gpu_operator.agents.validator.settings import Settings

__all__ = ["COMPONENTS", "Context", "Paths", "Settings", "Timing", "ValidationFailed", "main", "run"]
