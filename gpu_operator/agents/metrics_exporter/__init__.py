"""The metrics exporter: dcgm-exporter's Prometheus metrics, read from NVML instead of DCGM.

`gpu-operator-agent metrics-exporter` serves `/metrics` and `/health` (default `:9400`) with the fields of a
dcgm-exporter collectors file (:mod:`.counters`; the package ships the default list), named, typed, described
and labelled as dcgm-exporter 4.8 does (:mod:`.entities`, :mod:`.render`), one series per GPU or per GPU
instance of a MIG-enabled GPU. Values come from one NVML sampling pass per collection interval
(:mod:`.collector`, on a background thread, :mod:`.loop`), the XID event stream (:mod:`.xid`) and, on Hopper and
later, GPM profiling. With `--kubernetes` the series of GPUs held by pods carry `pod`, `namespace` and
`container`, from the kubelet's pod-resources API (:mod:`.attribution`).
"""

from gpu_operator.agents.metrics_exporter.collector import (
    Attribution,
    Collector,
    Sources,
)
from gpu_operator.agents.metrics_exporter.counters import (
    Counter,
    load_counters,
    packaged_default_counters,
)
from gpu_operator.agents.metrics_exporter.entities import Entity, IdentityOptions
from gpu_operator.agents.metrics_exporter.loop import CollectionLoop

__all__ = [
    "Attribution",
    "CollectionLoop",
    "Collector",
    "Counter",
    "Entity",
    "IdentityOptions",
    "Sources",
    "load_counters",
    "packaged_default_counters",
]
