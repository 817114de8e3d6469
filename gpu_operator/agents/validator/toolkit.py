"""The toolkit check: can a container started through the NVIDIA runtime use the GPUs?

The toolkit-validation container runs with `NVIDIA_VISIBLE_DEVICES=all` under the `nvidia` runtime class (or
the NRI plugin's CDI annotation) and mounts no driver of its own, so the driver library and device nodes it sees
are the ones the container toolkit injected. NVIDIA's check runs the injected `nvidia-smi`; we ask NVML the same
question through the library the dynamic loader finds. It passes when NVML starts and reports a GPU.
"""

from __future__ import annotations

from gpu_operator.agents.validator.context import Context
from gpu_operator.agents.validator.driver_probe import probe_driver
from gpu_operator.agents.validator.status import TOOLKIT_READY

__all__ = ["toolkit"]


def toolkit(ctx: Context) -> None:
    ctx.status.remove(TOOLKIT_READY)
    ctx.retry.run(lambda: probe_driver(ctx.settings.nvml, None, environ=ctx.environ), "toolkit is not ready")
    ctx.status.write(TOOLKIT_READY)
