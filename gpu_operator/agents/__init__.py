"""Node agents: the programs that run on GPU nodes in place of NVIDIA's operand binaries.

Every agent is reached as `gpu-operator-agent <name>` (see :mod:`gpu_operator.agents.cli`) and accepts the flags
and environment variables of the NVIDIA program it replaces, so the operand DaemonSets keep their upstream env.
All of them read the GPUs through one NVML layer (:mod:`gpu_operator.agents.nvml`), which is either the real
driver library (pynvml) or a simulated node described by a profile, and none of them imports Pulumi or the
render layer.
"""

__all__: list[str] = []
