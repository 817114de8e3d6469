"""What the two Prometheus agents share: text exposition, the snapshot they serve, and the HTTP server.

Both the metrics exporter (dcgm-exporter's replacement) and the node status exporter (the validator's metrics
mode) work the same way: a background activity keeps a :class:`Snapshot` current - a pre-rendered scrape body
in Prometheus text format 0.0.4 (:mod:`.text_format`) plus a health verdict - and an
:class:`ExpositionServer` hands it out on `/metrics` and `/health`. A scrape therefore never waits for NVML,
the kubelet or the disk.
"""

from gpu_operator.agents.exposition.address import ListenAddress, parse_listen_address
from gpu_operator.agents.exposition.server import (
    ExpositionServer,
    Response,
    Route,
    health_route,
    landing_route,
    metrics_route,
)
from gpu_operator.agents.exposition.snapshot import (
    HEALTHY,
    Health,
    Snapshot,
    SnapshotHolder,
)
from gpu_operator.agents.exposition.text_format import (
    CONTENT_TYPE,
    Family,
    FormattedSample,
    LabelBlock,
    Labels,
    Sample,
    format_value,
    label_signature,
    render_families,
)

__all__ = [
    "CONTENT_TYPE",
    "HEALTHY",
    "ExpositionServer",
    "Family",
    "FormattedSample",
    "Health",
    "LabelBlock",
    "Labels",
    "ListenAddress",
    "Response",
    "Route",
    "Sample",
    "Snapshot",
    "SnapshotHolder",
    "format_value",
    "health_route",
    "label_signature",
    "landing_route",
    "metrics_route",
    "parse_listen_address",
    "render_families",
]
