"""What the metrics exporter loads: with pod attribution on, neither grpcio nor the protobuf runtime.

Upstream: dcgm-exporter asks the kubelet once per collection over a fresh gRPC connection
(`internal/pkg/transformation/kubernetes.go`, `PodMapper.getMappings` -> `connectToServer` -> `listPods`). We make
the same call with h2 and read the answer from the wire format; grpcio and protobuf were most of the exporter's
resident memory (`tests/bench/test_exporter_memory_bench.py` measures it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gpu_operator.agents.nvml.simulated import load_profile
from tests.agents.kubelet.fake_kubelet import container, fake_kubelet, pod

ROOT = Path(__file__).resolve().parents[3]

PROGRAM = """
import json, sys
from gpu_operator.agents.metrics_exporter import command
from gpu_operator.agents.kubelet import PodResourcesClient
devices = PodResourcesClient(sys.argv[1]).list_devices()
heavy = sorted({m.split(".")[0] if m.startswith("grpc") else m for m in sys.modules
                if m == "grpc" or m.startswith(("grpc.", "google.protobuf", "asyncio"))})
print(json.dumps({"heavy": heavy, "pods": [d.pod for d in devices or ()]}))
"""


def test_the_exporter_asks_the_kubelet_without_grpcio_or_protobuf() -> None:
    uuid = load_profile("h100-8x").gpus[0].uuid
    with fake_kubelet([pod("trainer-0", "ml", container("main", ("nvidia.com/gpu", [uuid])))]) as kubelet:
        out = subprocess.run([sys.executable, "-c", PROGRAM, kubelet.socket_path], cwd=ROOT, capture_output=True,
                             text=True, check=True, timeout=60).stdout
    found = json.loads(out)
    assert found == {"heavy": [], "pods": ["trainer-0"]}
