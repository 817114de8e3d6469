"""`make gpu-check`: the agents against the real driver on a machine with an NVIDIA GPU, in one command, one report.

`python -m tests.gpu` runs, in order, the steps of :mod:`tests.gpu.steps` (`GPU_REQUIRED=1 pytest -m gpu`, then
each agent against the driver, compared with nvidia-smi) and writes :mod:`tests.gpu.report`'s JSON and Markdown.
Every step is a function of a :class:`~tests.gpu.steps.CheckContext`, so the whole run also works against a
simulated NVML backend, which is how the CPU tests beside this package exercise it.
"""
