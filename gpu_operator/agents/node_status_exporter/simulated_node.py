"""The node status probes on a simulated GPU node (`--nvml fake:<profile>`).

The exporter itself reads no GPU, but two of its probes look at the node's driver and PCI bus. On a simulated
node those questions have simulated answers: the driver "works" when the profile's NVML initialises (a profile
with an init fault fails validation), and the NVIDIA PCI devices are the simulated bus's functions.
"""

from __future__ import annotations

from gpu_operator.agents.node_status_exporter.pci_count import FAILED
from gpu_operator.agents.nvml import NvmlError, open_nvml
from gpu_operator.agents.nvml.selection import parse_nvml_choice

__all__ = ["SimulatedDriverCheck", "SimulatedPciCounter", "is_simulated"]


def is_simulated(spec: str | None) -> bool:
    """True for `fake:<profile>`; None and `auto` mean the real node."""
    return spec is not None and parse_nvml_choice(spec).simulated


class SimulatedDriverCheck:
    """Passes when the simulated node's NVML starts."""

    def __init__(self, spec: str) -> None:
        self._spec = spec

    def __call__(self) -> bool:
        try:
            open_nvml(self._spec).close()
        except NvmlError:
            return False
        return True


class SimulatedPciCounter:
    """The NVIDIA functions of the simulated PCI bus."""

    def __init__(self, spec: str) -> None:
        self._spec = spec

    def __call__(self) -> int:
        node = open_nvml(self._spec, fail_on_init_error=False)
        try:
            return len(node.pci.nvidia_functions())
        except OSError:
            return FAILED
        finally:
            node.close()
