"""Workload helpers: GPUDirect RDMA pod settings that validate as Kubernetes objects and fit the pool."""

from __future__ import annotations

import dataclasses
import importlib.util
from types import ModuleType
from typing import Any

import pytest

from gpu_operator.config import ConfigError, GpuStackConfig, load_config, parse_config
from gpu_operator.workloads import rdma_workload
from tests.support.kubeflow import training_job_errors
from tests.support.reference import REPO_ROOT
from tests.support.schemas import validate_objects

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "taints": ["sku=gpu:NoSchedule", "team=ml:NoExecute"]}
T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}
BOTH = {"devicePlugins": ["sriov", "shared"], "ipoib": {"ipPool": {"subnet": "192.168.0.0/16"}}}


def config(network: dict[str, Any] | None = None) -> GpuStackConfig:
    return parse_config({"aks": AKS, "pools": [H100, T4], "network": network or {}})


def _example() -> ModuleType:
    path = REPO_ROOT / "examples" / "workloads" / "rdma_workloads.py"
    spec = importlib.util.spec_from_file_location("rdma_workloads", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sriov_pod_gets_gpus_vfs_ipc_lock_shm_and_the_pools_placement() -> None:
    pod = rdma_workload(config(), "h100").pod("rdma", "ubuntu:24.04")
    assert validate_objects([pod]) == []
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/ib": "8"}
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    assert pod["spec"]["volumes"][0]["emptyDir"]["medium"] == "Memory"
    assert pod["spec"]["nodeSelector"] == {"kubernetes.azure.com/agentpool": "h100"}
    assert {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoExecute"} in pod["spec"]["tolerations"]
    env = {var["name"]: var["value"] for var in container["env"]}
    assert env["NCCL_IB_DISABLE"] == "0" and env["NCCL_NET_GDR_LEVEL"] == "SYS"


def test_fewer_gpus_get_one_vf_each() -> None:
    workload = rdma_workload(config(), "h100", gpus=2)
    assert workload.resources == {"nvidia.com/gpu": "2", "rdma/ib": "2"}


def test_the_pod_is_written_as_the_api_server_stores_it() -> None:
    workload = dataclasses.replace(rdma_workload(config(), "h100"), shm_size="16384Mi")
    pod = workload.pod("rdma", "ubuntu:24.04")
    assert pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "16Gi"
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/ib": "8"}


def test_shared_plugin_pod_with_ipoib() -> None:
    pod = rdma_workload(config(BOTH), "h100", device_plugin="shared", ipoib=True).pod("rdma", "ubuntu:24.04")
    assert validate_objects([pod]) == []
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/shared_ib": "1"}
    assert pod["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "aks-infiniband"}
    assert {"name": "NCCL_SOCKET_IFNAME", "value": "net1"} in pod["spec"]["containers"][0]["env"]


@pytest.mark.parametrize(("network", "pool", "kwargs", "path", "words"), [
    (None, "h100", {"rdma_devices": 9}, "rdma_devices", "8 InfiniBand NICs"),
    (None, "h100", {"gpus": 9}, "gpus", "has 8"),
    (None, "t4", {}, "pool", "no InfiniBand"),
    (None, "h100", {"device_plugin": "shared"}, "device_plugin", "not deployed"),
    (None, "h100", {"ipoib": True}, "ipoib", "network.ipoib"),
    ({"enabled": False}, "h100", {}, "network.enabled", "no RDMA device plugin"),
    (None, "a100", {}, "pool", "no pool named"),
])
def test_requests_the_pool_cannot_serve_are_errors(
    network: dict[str, Any] | None, pool: str, kwargs: dict[str, Any], path: str, words: str
) -> None:
    with pytest.raises(ConfigError) as error:
        rdma_workload(config(network), pool, **kwargs)
    found = {problem.path: problem.message for problem in error.value.problems}
    assert path in found and words in found[path], found


def test_the_examples_validate_as_kubernetes_objects() -> None:
    module = _example()
    objects = module.workloads(config(BOTH), "h100")
    assert [obj["metadata"]["name"] for obj in objects] == [
        "nvidia-topology", "rdma-sriov-test", "rdma-shared-test", "nccl-allreduce", "nccl-allreduce"]
    assert validate_objects(objects) == []
    job = objects[-1]
    assert job["spec"]["completions"] == 2 and job["spec"]["completionMode"] == "Indexed"


def test_the_example_renders_for_the_built_in_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert _example().main([]) == 0
    out = capsys.readouterr().out
    assert "rdma/ib" in out and "nccl-allreduce" in out
    assert load_config(None).network.device_plugins == ("sriov",)


def test_the_pytorchjob_example_validates_against_the_training_operators_models() -> None:
    module = _example()
    objects = module.workloads(config(BOTH), "h100", pytorchjob=True)
    assert [obj["kind"] for obj in objects] == ["ConfigMap", "Pod", "Pod", "PyTorchJob"]
    job = objects[-1]
    assert training_job_errors(job) == []
    replicas = job["spec"]["pytorchReplicaSpecs"]
    assert {name: spec["replicas"] for name, spec in replicas.items()} == {"Master": 1, "Worker": 1}
    container = replicas["Worker"]["template"]["spec"]["containers"][0]
    assert container["name"] == "pytorch"  # the training operator injects its environment into this container
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/ib": "8"}
    assert "--node-rank=$(RANK)" in container["command"] and "--master-addr=$(MASTER_ADDR)" in container["command"]
    assert job["spec"]["nprocPerNode"] == "8"


def test_the_training_job_check_is_strict() -> None:
    job = _example().nccl_allreduce_pytorchjob(config(), "h100")
    job["spec"]["pytorchReplicaSpecs"]["Master"]["restartpolicy"] = "Never"
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "1"
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["gpus"] = 8
    errors = training_job_errors(job)
    assert any("Master.restartpolicy: not a field" in e for e in errors), errors
    assert any("Worker.replicas: expected int" in e for e in errors), errors
    assert any("gpus" in e for e in errors), errors


@pytest.mark.parametrize("pytorchjob", [False, True])
def test_torchrun_runs_the_script_as_a_command(pytorchjob: bool) -> None:
    """torchrun has no `-c`: the inline script runs through `--no-python python -c`."""
    objects = _example().workloads(config(), "h100", pytorchjob=pytorchjob)
    job = objects[-1]
    spec = job["spec"]["pytorchReplicaSpecs"]["Master"] if pytorchjob else job["spec"]
    command = spec["template"]["spec"]["containers"][0]["command"]
    assert command[0] == "torchrun"
    assert command[command.index("--no-python") + 1:command.index("--no-python") + 3] == ["python", "-c"]


# -- NCCL_TOPO_FILE: the VM's real PCIe layout, as Azure's jobs give it -------------------------------------------

import xml.etree.ElementTree as ET  # noqa: E402

from gpu_operator.workloads import nccl_topology  # noqa: E402


def test_nd_pools_mount_the_nccl_topology_as_azures_jobs_do() -> None:
    """Azure/aks-rdma-infiniband tests/scenarios/k8s/templates/mpi-job.yaml: `NCCL_TOPO_FILE=
    /opt/nvidia-topology/topo.xml`, from ConfigMap `nvidia-topology` (key `topo.xml`) mounted on every worker."""
    workload = rdma_workload(config(), "h100")
    assert workload.env["NCCL_TOPO_FILE"] == "/opt/nvidia-topology/topo.xml"
    pod = workload.pod("p", "img")
    [container] = pod["spec"]["containers"]
    assert {"name": "nvidia-topology", "mountPath": "/opt/nvidia-topology", "readOnly": True} in container[
        "volumeMounts"]
    assert {"name": "nvidia-topology", "configMap": {"name": "nvidia-topology"}} in pod["spec"]["volumes"]
    [config_map] = workload.config_maps("ml")
    assert (config_map["metadata"]["name"], config_map["metadata"]["namespace"]) == ("nvidia-topology", "ml")
    assert validate_objects([config_map, pod]) == []


@pytest.mark.parametrize(("size", "topology"), [
    ("Standard_ND96isr_H100_v5", "ndv5-topo.xml"), ("Standard_ND96isr_H200_v5", "ndv5-topo.xml"),
    ("Standard_ND96asr_v4", "ndv4-topo.xml"), ("Standard_ND96amsr_A100_v4", "ndv4-topo.xml"),
    ("Standard_NC4as_T4_v3", None),
])
def test_each_nd_family_gets_the_file_azure_picks_for_it(size: str, topology: str | None) -> None:
    """tests/scenarios/util.sh `topo_file_name`: ND v5 -> ndv5-topo.xml, ND v4 (ND96asr_v4 and NDm) -> ndv4."""
    found = nccl_topology(size)
    assert (found.name if found else None) == topology


def _pairs(xml: str) -> tuple[list[tuple[str, str, tuple[str, ...]]], ET.Element]:
    root = ET.fromstring(xml)
    switches = []
    for cpu in root.findall("cpu"):
        for bridge in cpu.findall("pci"):
            switches.append((cpu.get("numaid"), bridge.get("class"),
                             tuple(f"{child.get('class')}@{child.get('busid')}" for child in bridge)))
    return switches, root


@pytest.mark.parametrize("size", ["Standard_ND96isr_H100_v5", "Standard_ND96asr_v4"])
def test_the_topology_pairs_every_gpu_with_a_nic_under_one_switch(size: str) -> None:
    """NCCL src/graph/topo.cc `ncclTopoAddPci` / `kvDictPciClass`: class 0x060400 is a PCI switch, 0x03... a GPU,
    0x02... a NIC; `kvDictPciGen` must know the link speed string. A GPU and a NIC under one switch are PIX: NCCL
    then sends each GPU's traffic through its own NIC with GPUDirect RDMA."""
    topology = nccl_topology(size)
    assert topology is not None
    switches, root = _pairs(topology.xml())
    hardware = parse_config({"aks": AKS, "pools": [{"name": "p", "vmSize": size}]}).pools[0].hardware
    gpus = [d for _, _, devices in switches for d in devices if d.startswith("0x03")]
    nics = [d for _, _, devices in switches for d in devices if d.startswith("0x02")]
    assert len(gpus) == hardware.gpu_count and len(nics) == hardware.infiniband.nics
    assert len(set(gpus + nics)) == len(gpus) + len(nics)
    for _, bridge_class, devices in switches:
        assert bridge_class == "0x060400"
        assert sum(d.startswith("0x03") for d in devices) == sum(d.startswith("0x02") for d in devices) >= 1
    speeds = {element.get("link_speed") for element in root.iter("pci")}
    assert speeds <= {"2.5 GT/s", "5 GT/s", "8 GT/s", "16 GT/s", "32 GT/s", "16.0 GT/s PCIe", "32.0 GT/s PCIe"}
    masks = [int(cpu.get("affinity").replace(",", ""), 16) for cpu in root.findall("cpu")]
    assert sum(masks) == (1 << 96) - 1 and all(a & b == 0 for i, a in enumerate(masks) for b in masks[i + 1:])


def test_the_example_starts_with_the_topology_config_map() -> None:
    objects = _example().workloads(load_config(None), "h100")
    assert objects[0]["kind"] == "ConfigMap" and objects[0]["metadata"]["name"] == "nvidia-topology"
    mounted = [o for o in objects if o["kind"] in ("Pod", "Job")]
    assert mounted and all("nvidia-topology" in str(o) for o in mounted)
