"""GPUDirect RDMA workloads for the built-in default stack's ND H100 v5 pool, printed as Kubernetes YAML.

    python examples/workloads/rdma_workloads.py [-f CONFIG] [--pool NAME] > rdma-workloads.yaml

* `rdma-sriov-test`: a pod with all eight GPUs and eight InfiniBand VFs (`rdma/ib`, SR-IOV device plugin);
* `rdma-shared-test`: a pod with all GPUs and one `rdma/shared_ib` slot (shared device plugin; the config must
  list `shared` in `network.devicePlugins`, so it is left out otherwise);
* `nccl-allreduce`: an NCCL all-reduce across two nodes with `torchrun`, as an Indexed Job (one pod per node,
  rank from the completion index) with a headless Service for the rendezvous.

Every object comes from :func:`gpu_operator.workloads.rdma_workload`, so resources, `IPC_LOCK`, `/dev/shm`,
node selector, tolerations and NCCL settings follow the pool.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

from gpu_operator.config import GpuStackConfig, load_config
from gpu_operator.workloads import rdma_workload

IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
JOB = "nccl-allreduce"
NODES = 2
ALLREDUCE = (
    "import os, torch, torch.distributed as dist\n"
    "dist.init_process_group('nccl')\n"
    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    "x = torch.ones(1 << 20, device='cuda')\n"
    "for _ in range(5): dist.all_reduce(x)\n"
    "torch.cuda.synchronize()\n"
    "assert x[0].item() == dist.get_world_size() ** 5, x[0].item()\n"
    "print('all_reduce ok, world size', dist.get_world_size())\n"
)


def rdma_test_pods(config: GpuStackConfig, pool: str) -> list[dict[str, Any]]:
    """One test pod per deployed RDMA device plugin, listing the InfiniBand devices it got."""
    command = ["bash", "-c", "ls -l /dev/infiniband && nvidia-smi -L"]
    return [
        rdma_workload(config, pool, device_plugin=plugin).pod(f"rdma-{plugin}-test", IMAGE, command=command)
        for plugin in config.network.device_plugins
    ]


def nccl_allreduce_job(config: GpuStackConfig, pool: str) -> list[dict[str, Any]]:
    """A headless Service and an Indexed Job running an NCCL all-reduce across NODES nodes of the pool."""
    workload = rdma_workload(config, pool)
    gpus = workload.resources["nvidia.com/gpu"]
    labels = {"app": JOB}
    torchrun = [
        "torchrun", f"--nnodes={NODES}", f"--nproc-per-node={gpus}", "--node-rank=$(JOB_COMPLETION_INDEX)",
        f"--master-addr={JOB}-0.{JOB}", "--master-port=29500", "-c", ALLREDUCE,
    ]
    container = workload.container("allreduce", IMAGE, command=torchrun)
    spread = {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}]}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": JOB, "namespace": "default"},
        "spec": {"clusterIP": "None", "selector": labels, "ports": [{"name": "rendezvous", "port": 29500}]},
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": JOB, "namespace": "default"},
        "spec": {
            "completionMode": "Indexed",
            "completions": NODES,
            "parallelism": NODES,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": workload.pod_spec([container], subdomain=JOB, restartPolicy="Never",
                                          affinity={"podAntiAffinity": spread}),
            },
        },
    }
    return [service, job]


def workloads(config: GpuStackConfig, pool: str) -> list[dict[str, Any]]:
    return [*rdma_test_pods(config, pool), *nccl_allreduce_job(config, pool)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-f", "--file", help="config document (default: the built-in default stack)")
    parser.add_argument("--pool", help="the InfiniBand pool (default: the first one)")
    args = parser.parse_args(argv)
    config = load_config(args.file)
    pool = args.pool or next(p.name for p in config.pools if p.has_infiniband)
    yaml.safe_dump_all(workloads(config, pool), sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
