"""A stand-in agent process for the Kubernetes client benchmark (run as a script, not collected).

`python -m tests.bench.kube_memory_probe KUBECONFIG REQUESTS` prints one JSON line: the process's resident memory
(KiB) at start, after importing the agents' Kubernetes client (and the node status exporter's use of it, an agent
module that talks to the API server) and making the client, after its first request, and after REQUESTS more
requests - GETs of node `n1`, a LIST of pods every tenth - with the seconds those took. The API server runs in
another process, so only the client's memory is counted.
"""

from __future__ import annotations

import json
import re
import sys
import time

__all__ = ["main", "rss_kib"]


def rss_kib() -> int:
    """This process's resident set size in KiB (Linux)."""
    with open("/proc/self/status") as status:
        found = re.search(r"VmRSS:\s+(\d+)", status.read())
    assert found is not None
    return int(found.group(1))


def main(argv: list[str]) -> int:
    kubeconfig, requests = argv[0], int(argv[1])
    started = rss_kib()
    from gpu_operator.agents.kube import NODES, PODS, KubeClient
    from gpu_operator.agents.node_status_exporter import node_capacity  # noqa: F401  (an agent that uses it)

    client = KubeClient.from_environment({"KUBECONFIG": kubeconfig})
    imported = rss_kib()
    client.get(NODES, "n1")
    first = rss_kib()
    began = time.perf_counter()
    for index in range(requests):
        if index % 10 == 9:
            client.list(PODS, "gpu-operator")
        else:
            client.get(NODES, "n1")
    seconds = time.perf_counter() - began
    print(json.dumps({"start_kib": started, "import_kib": imported, "first_request_kib": first,
                      "after_requests_kib": rss_kib(), "requests": requests, "seconds": seconds}))
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
