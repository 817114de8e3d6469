"""Helpers for workloads that run on the GPU pools: what a pod needs to use GPUs with GPUDirect RDMA."""

from gpu_operator.workloads.nccl_topology import NcclTopology, nccl_topology
from gpu_operator.workloads.rdma import NCCL_ENV, RdmaWorkload, rdma_workload

__all__ = ["NCCL_ENV", "NcclTopology", "RdmaWorkload", "nccl_topology", "rdma_workload"]
