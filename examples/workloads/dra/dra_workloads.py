"""DRA workloads for NVIDIA's DRA driver, written as the YAML files beside this script.

    python examples/workloads/dra/dra_workloads.py [--check]

* `claim-templates.yaml`: ResourceClaimTemplates choosing GPUs by CEL over the driver's attributes: one H100
  with at least 80 GB (`one-h100`), two GPUs under one PCIe root complex (`two-gpus-one-pcie-root`), and one
  `1g.10gb` MIG device (`mig-1g-10gb`);
* `pod-with-claim.yaml`: a pod that gets its own claim from `one-h100`;
* `shared-claim.yaml`: a ResourceClaim shared by the two containers of one pod (both see the same GPU);
* `compute-domain.yaml`: a multi-node NVLink ComputeDomain and a two-pod Indexed Job whose pods claim its IMEX
  channel and all GPUs of their node.

Every object comes from :mod:`gpu_operator.workloads.dra`, which checks each selector against the attributes
the driver publishes. Test a claim offline against a simulated node:
`gpu-operator dra match examples/workloads/dra/claim-templates.yaml --nvml fake:h100-8x`.
`--check` compares the files with what the helpers produce (exit 1 when they differ).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from gpu_operator.workloads.dra import (
    PodClaim,
    Request,
    Selectors,
    claim_template,
    compute_domain,
    pod,
    resource_claim,
)

NAMESPACE = "ml"
IMAGE = "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04"
#: AKS GPU pools carry this taint (see the pools section); pods tolerate it.
TOLERATIONS = [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
HERE = Path(__file__).resolve().parent


def claim_templates() -> list[dict[str, Any]]:
    return [
        claim_template("one-h100", NAMESPACE, [
            Request("gpu", selectors=(Selectors.product("h100"), Selectors.min_memory("80G"))),
        ]),
        claim_template("two-gpus-one-pcie-root", NAMESPACE, [Request("gpus", count=2)], same_pcie_root=True),
        claim_template("mig-1g-10gb", NAMESPACE, [
            Request("mig", device_class="mig.nvidia.com", selectors=(Selectors.mig_profile("1g.10gb"),)),
        ]),
    ]


def pod_with_claim() -> list[dict[str, Any]]:
    return [pod("cuda-one-h100", NAMESPACE, IMAGE, [PodClaim("gpu", "template", "one-h100")],
                tolerations=TOLERATIONS)]


def shared_claim() -> list[dict[str, Any]]:
    return [
        resource_claim("shared-h100", NAMESPACE, [Request("gpu", selectors=(Selectors.product("h100"),))]),
        pod("two-containers-one-gpu", NAMESPACE, IMAGE, [PodClaim("gpu", "claim", "shared-h100")],
            containers=("trainer", "profiler"), command=("sh", "-c", "nvidia-smi -L && sleep 3600"),
            tolerations=TOLERATIONS),
    ]


def compute_domain_job() -> list[dict[str, Any]]:
    domain = compute_domain("nccl-domain", NAMESPACE, "nccl-domain-channel")
    gpus = claim_template("all-node-gpus", NAMESPACE, [Request("gpus", count=None)])
    template = pod("nccl", NAMESPACE, IMAGE, [
        PodClaim("imex-channel", "template", "nccl-domain-channel"),
        PodClaim("gpus", "template", "all-node-gpus"),
    ], command=("sh", "-c", "ls /dev/nvidia-caps-imex-channels && nvidia-smi -L"), tolerations=TOLERATIONS,
        restart_policy="Never")
    spec = template["spec"]
    spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"job-name": "nccl"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "nccl", "namespace": NAMESPACE},
        "spec": {
            "completions": 2,
            "parallelism": 2,
            "completionMode": "Indexed",
            "template": {"metadata": {"labels": {"job-name": "nccl"}}, "spec": spec},
        },
    }
    return [domain, gpus, job]


FILES = {
    "claim-templates.yaml": claim_templates,
    "pod-with-claim.yaml": pod_with_claim,
    "shared-claim.yaml": shared_claim,
    "compute-domain.yaml": compute_domain_job,
}


def text(objects: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False, width=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare the files with the helpers' output")
    args = parser.parse_args()
    stale = []
    for name, build in FILES.items():
        path, wanted = HERE / name, text(build())
        if args.check:
            if not path.exists() or path.read_text() != wanted:
                stale.append(name)
        else:
            path.write_text(wanted)
    if stale:
        print(f"out of date: {', '.join(stale)}; run python {Path(__file__).name}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
