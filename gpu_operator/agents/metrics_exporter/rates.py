"""NVLink bandwidth as DCGM reports it: a rate computed from two readings of the traffic counters.

NVML counts NVLink data sent and received in KiB (summed over all links). DCGM's
`DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL` is the change of transmitted plus received KiB per second between two
readings, divided by 1000, as an integer - 0 for the first reading (reference agents.md §3.3). GPUs without
NVLink counters get no value.
"""

from __future__ import annotations

from gpu_operator.agents.nvml import GpuSample

__all__ = ["KIB_PER_SECOND_PER_UNIT", "NvlinkRates"]

KIB_PER_SECOND_PER_UNIT = 1000


class NvlinkRates:
    """The previous reading per GPU; `update()` turns each new sample into the rate since then."""

    def __init__(self) -> None:
        self._previous: dict[int, tuple[float, int]] = {}

    def update(self, sample: GpuSample) -> int | None:
        if sample.nvlink_tx_kib is None or sample.nvlink_rx_kib is None:
            return None
        total = sample.nvlink_tx_kib + sample.nvlink_rx_kib
        previous = self._previous.get(sample.index)
        self._previous[sample.index] = (sample.timestamp, total)
        if previous is None or sample.timestamp <= previous[0]:
            return 0
        per_second = (total - previous[1]) / (sample.timestamp - previous[0])
        return max(0, int(per_second / KIB_PER_SECOND_PER_UNIT))
