"""GPUDirect RDMA workloads for the built-in default stack's ND H100 v5 pool, printed as Kubernetes YAML.

    python examples/workloads/rdma_workloads.py [-f CONFIG] [--pool NAME] > rdma-workloads.yaml

* `rdma-sriov-test`: a pod with all eight GPUs and eight InfiniBand VFs (`rdma/ib`, SR-IOV device plugin);
* `rdma-shared-test`: a pod with all GPUs and one `rdma/shared_ib` slot (shared device plugin; the config must
  list `shared` in `network.devicePlugins`, so it is left out otherwise);
* `nccl-allreduce`: an NCCL all-reduce across two nodes with `torchrun`, as an Indexed Job (one pod per node,
  rank from the completion index) with a headless Service for the rendezvous: plain Kubernetes, no operator;
* `nccl-allreduce-pytorchjob` (with `--pytorchjob`, instead of the Job): the same as a Kubeflow `PyTorchJob`
  (`kubeflow.org/v1`; the Kubeflow training operator must run in the cluster), one Master and one Worker, rank
  and rendezvous address from the environment the training operator injects (`RANK`, `MASTER_ADDR`,
  `MASTER_PORT`).

Every object comes from :func:`gpu_operator.workloads.rdma_workload`, so resources, `IPC_LOCK`, `/dev/shm`,
node selector, tolerations and NCCL settings follow the pool; on ND v4 / ND v5 pools the output starts with the
ConfigMap `nvidia-topology` that every pod mounts for `NCCL_TOPO_FILE`.
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
PYTORCHJOB = "nccl-allreduce-pytorchjob"
#: The training operator finds the framework container by this name.
PYTORCH_CONTAINER = "pytorch"
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


def _torchrun(gpus: str, node_rank: str, master_addr: str, master_port: str) -> list[str]:
    """torchrun starting one `python -c ALLREDUCE` per GPU (`--no-python`: the script is a command)."""
    return [
        "torchrun", f"--nnodes={NODES}", f"--nproc-per-node={gpus}", f"--node-rank={node_rank}",
        f"--master-addr={master_addr}", f"--master-port={master_port}", "--no-python", "python", "-c", ALLREDUCE,
    ]


def _one_pod_per_node(labels: dict[str, str]) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}]}}


def nccl_allreduce_job(config: GpuStackConfig, pool: str) -> list[dict[str, Any]]:
    """A headless Service and an Indexed Job running an NCCL all-reduce across NODES nodes of the pool."""
    workload = rdma_workload(config, pool)
    labels = {"app": JOB}
    torchrun = _torchrun(workload.resources["nvidia.com/gpu"], "$(JOB_COMPLETION_INDEX)", f"{JOB}-0.{JOB}", "29500")
    container = workload.container("allreduce", IMAGE, command=torchrun)
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
                                          affinity=_one_pod_per_node(labels)),
            },
        },
    }
    return [service, job]


def nccl_allreduce_pytorchjob(config: GpuStackConfig, pool: str) -> dict[str, Any]:
    """The NCCL all-reduce as a Kubeflow PyTorchJob: a Master and NODES - 1 Workers, one per node of the pool."""
    workload = rdma_workload(config, pool)
    gpus = workload.resources["nvidia.com/gpu"]
    labels = {"app": PYTORCHJOB}
    torchrun = _torchrun(gpus, "$(RANK)", "$(MASTER_ADDR)", "$(MASTER_PORT)")
    container = workload.container(PYTORCH_CONTAINER, IMAGE, command=torchrun)

    def replica(count: int) -> dict[str, Any]:
        return {
            "replicas": count,
            "restartPolicy": "Never",
            "template": {
                "metadata": {"labels": labels},
                "spec": workload.pod_spec([container], affinity=_one_pod_per_node(labels)),
            },
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": PYTORCHJOB, "namespace": "default"},
        "spec": {
            "nprocPerNode": gpus,
            "runPolicy": {"backoffLimit": 0, "cleanPodPolicy": "Running"},
            "pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(NODES - 1)},
        },
    }


def workloads(config: GpuStackConfig, pool: str, *, pytorchjob: bool = False) -> list[dict[str, Any]]:
    jobs = [nccl_allreduce_pytorchjob(config, pool)] if pytorchjob else nccl_allreduce_job(config, pool)
    # the NCCL topology ConfigMap the pods mount (ND v4 / ND v5 pools) comes first
    return [*rdma_workload(config, pool).config_maps("default"), *rdma_test_pods(config, pool), *jobs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-f", "--file", help="config document (default: the built-in default stack)")
    parser.add_argument("--pool", help="the InfiniBand pool (default: the first one)")
    parser.add_argument("--pytorchjob", action="store_true",
                        help="the all-reduce as a Kubeflow PyTorchJob instead of an Indexed Job")
    args = parser.parse_args(argv)
    config = load_config(args.file)
    pool = args.pool or next(p.name for p in config.pools if p.has_infiniband)
    yaml.safe_dump_all(workloads(config, pool, pytorchjob=args.pytorchjob), sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
