"""The metrics exporter process with a chosen pod-resources client (run as a module, not collected).

`python -m tests.bench.exporter_memory_probe CLIENT EXPORTER-FLAGS...` runs `gpu-operator-agent
metrics-exporter EXPORTER-FLAGS...` in this process with CLIENT as its pod-resources client:

* `shipped`: the exporter as it is (HTTP/2 call, wire-format reading; neither grpcio nor protobuf loaded);
* `grpcio`: the client before the benchmark (`GrpcioPodResourcesClient`: grpcio channel, protobuf messages);
* `h2-protobuf`: the shipped call with protobuf messages (`H2ProtobufPodResourcesClient`).

A baseline's modules are imported only when it is chosen, so each process carries exactly its own import set.
"""

from __future__ import annotations

import sys

__all__ = ["CLIENTS", "main"]

CLIENTS = ("shipped", "grpcio", "h2-protobuf")


def main(argv: list[str]) -> int:
    client, flags = argv[0], argv[1:]
    if client not in CLIENTS:
        print(f"unknown client {client!r}; one of {', '.join(CLIENTS)}", file=sys.stderr)
        return 2
    from gpu_operator.agents.metrics_exporter import command

    if client == "grpcio":
        from tests.bench.pod_resources_baselines import GrpcioPodResourcesClient

        command.PodResourcesClient = GrpcioPodResourcesClient  # type: ignore[misc]
    elif client == "h2-protobuf":
        from tests.bench.pod_resources_baselines import H2ProtobufPodResourcesClient

        command.PodResourcesClient = H2ProtobufPodResourcesClient  # type: ignore[misc]
    return command.main(flags)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
