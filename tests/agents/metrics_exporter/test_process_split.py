"""Shared GPUs split per pod (`--kubernetes-virtual-gpus`): NVML's per-process data, pids to pods through their
cgroups, and each holding pod's own `DCGM_FI_DEV_GPU_UTIL` / `DCGM_FI_DEV_FB_USED` with its `pod_uid`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from gpu_operator.agents.kubelet import PodResourcesClient
from gpu_operator.agents.metrics_exporter import Attribution
from gpu_operator.agents.metrics_exporter.pod_metadata import PodMetadata, _metadata
from gpu_operator.agents.metrics_exporter.process_split import owner_of
from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.simulated import SimulatedLibrary, load_profile
from gpu_operator.agents.nvml.simulated.pci import SimulatedPciBus
from gpu_operator.agents.nvml.simulated.profile import SimulatedProcess
from tests.agents.kubelet.fake_kubelet import FakeKubelet, container, fake_kubelet, pod
from tests.agents.metrics_exporter.support import families_of, make_collector

UID_A = "1f0e5a4c-3b9d-4c1e-9a7b-2d6f8e0c1a2b"
UID_B = "7c2d9e10-5a4b-4f3c-8e21-0b9a6d5c4e3f"
UID_OTHER = "00000000-1111-2222-3333-444444444444"
CTR_A1, CTR_A2, CTR_B = "a1" * 32, "a2" * 32, "b0" * 32
SHARED = 4


@pytest.fixture
def kubelet() -> Iterator[FakeKubelet]:
    with fake_kubelet() as fake:
        yield fake


def _cgroups(proc: Path) -> None:
    """Processes of pod a (systemd cgroup driver, cgroup v2), pod b (cgroupfs, v1), another pod and the host."""
    systemd = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{}.scope\n"
    cgroupfs = "12:memory:/kubepods/besteffort/pod{}/{}\n3:cpu,cpuacct:/kubepods/besteffort/pod{}/{}\n"
    files = {
        1001: systemd.format(UID_A.replace("-", "_"), CTR_A1),
        1002: systemd.format(UID_A.replace("-", "_"), CTR_A2),
        2001: cgroupfs.format(UID_B, CTR_B, UID_B, CTR_B),
        3001: "0::/system.slice/nvidia-persistenced.service\n",
        4001: systemd.format(UID_OTHER.replace("-", "_"), "c" * 64),
    }
    for pid, text in files.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "cgroup").write_text(text)


def _nvml() -> LibraryNvml:
    profile = load_profile("h100-8x")
    processes = (
        SimulatedProcess(pid=1001, used_memory_mib=2048, sm_util_percent=30),
        SimulatedProcess(pid=1002, used_memory_mib=1024, sm_util_percent=10),
        SimulatedProcess(pid=2001, used_memory_mib=4096, sm_util_percent=25),
        SimulatedProcess(pid=3001, used_memory_mib=512, sm_util_percent=5),
        SimulatedProcess(pid=4001, used_memory_mib=256, sm_util_percent=7),
        SimulatedProcess(pid=5001, used_memory_mib=128, sm_util_percent=9),  # gone from /proc
    )
    gpus = list(profile.gpus)
    gpus[SHARED] = gpus[SHARED].model_copy(update={"processes": processes})
    profile = profile.model_copy(update={"gpus": tuple(gpus)})
    return LibraryNvml.open(SimulatedLibrary(profile, sleep=lambda s: None), SimulatedPciBus(profile))


class _Pods:
    def __init__(self, pods: Mapping[tuple[str, str], PodMetadata]) -> None:
        self._pods = pods

    def pods(self) -> Mapping[tuple[str, str], PodMetadata]:
        return self._pods


METADATA = {
    ("ns", "a"): PodMetadata(UID_A, {}, {CTR_A1: "main", CTR_A2: "sidecar"}),
    ("ns", "b"): PodMetadata(UID_B, {}, {CTR_B: "main"}),
    ("ns", "other"): PodMetadata(UID_OTHER, {}, {"c" * 64: "main"}),
}


def _values(families: Mapping[str, object], name: str) -> dict[tuple[str, str, str], float]:
    family = families[name]
    return {(s.labels["pod"], s.labels["container"], s.labels["pod_uid"]): s.value  # type: ignore[attr-defined]
            for s in family.samples if s.labels["gpu"] == str(SHARED)}  # type: ignore[attr-defined]


def test_shared_gpu_utilisation_and_memory_are_split_per_holding_pod(kubelet: FakeKubelet, tmp_path: Path) -> None:
    _cgroups(tmp_path)
    nvml = _nvml()
    uuid = nvml.devices()[SHARED].uuid
    kubelet.pods = [
        pod("a", "ns", container("main", ("nvidia.com/gpu", [f"{uuid}::0"])),
            container("sidecar", ("nvidia.com/gpu", [f"{uuid}::1"]))),
        pod("b", "ns", container("main", ("nvidia.com/gpu", [f"{uuid}::2"]))),
        pod("idle", "ns", container("main", ("nvidia.com/gpu", [f"{uuid}::3"]))),
    ]
    metadata = {**METADATA, ("ns", "idle"): PodMetadata("9" * 8 + "-0000-0000-0000-" + "0" * 12)}
    collector = make_collector("h100-8x", nvml=nvml, pods=PodResourcesClient(kubelet.socket_path),
                               pod_metadata=_Pods(metadata),
                               attribution=Attribution(kubernetes=True, virtual_gpus=True, proc_root=str(tmp_path)))
    families = families_of(collector, cycles=1)
    idle_uid = metadata[("ns", "idle")].uid
    assert _values(families, "DCGM_FI_DEV_GPU_UTIL") == {
        ("a", "main", UID_A): 30, ("a", "sidecar", UID_A): 10, ("b", "main", UID_B): 25, ("idle", "main", idle_uid): 0}
    assert _values(families, "DCGM_FI_DEV_FB_USED") == {
        ("a", "main", UID_A): 2048, ("a", "sidecar", UID_A): 1024, ("b", "main", UID_B): 4096,
        ("idle", "main", idle_uid): 0}
    # the other fields of the shared GPU stay the device's, one per holder; other GPUs are untouched
    temperatures = {v for (_, _, _), v in _values(families, "DCGM_FI_DEV_GPU_TEMP").items()}
    assert len(temperatures) == 1
    device_util = [s for s in families["DCGM_FI_DEV_GPU_UTIL"].samples if s.labels["gpu"] == "0"]
    assert len(device_util) == 1 and "pod" not in device_util[0].labels


def test_an_unknown_container_counts_for_its_pods_first_holder(kubelet: FakeKubelet, tmp_path: Path) -> None:
    _cgroups(tmp_path)
    nvml = _nvml()
    uuid = nvml.devices()[SHARED].uuid
    kubelet.pods = [pod("a", "ns", container("main", ("nvidia.com/gpu", [f"{uuid}::0"])),
                        container("sidecar", ("nvidia.com/gpu", [f"{uuid}::1"])))]
    metadata = {("ns", "a"): PodMetadata(UID_A)}  # no container statuses yet
    collector = make_collector("h100-8x", nvml=nvml, pods=PodResourcesClient(kubelet.socket_path),
                               pod_metadata=_Pods(metadata),
                               attribution=Attribution(kubernetes=True, virtual_gpus=True, proc_root=str(tmp_path)))
    families = families_of(collector, cycles=1)
    assert _values(families, "DCGM_FI_DEV_GPU_UTIL") == {("a", "main", UID_A): 40, ("a", "sidecar", UID_A): 0}


def test_without_virtual_gpus_no_process_is_read_and_the_device_value_stays(
    kubelet: FakeKubelet, tmp_path: Path
) -> None:
    nvml = _nvml()
    uuid = nvml.devices()[SHARED].uuid
    kubelet.pods = [pod("a", "ns", container("main", ("nvidia.com/gpu", [f"{uuid}::0"])))]
    collector = make_collector("h100-8x", nvml=nvml, pods=PodResourcesClient(kubelet.socket_path),
                               attribution=Attribution(kubernetes=True))
    assert nvml.sample()[SHARED].processes == ()
    families = families_of(collector, cycles=1)
    util = [s for s in families["DCGM_FI_DEV_GPU_UTIL"].samples if s.labels["gpu"] == str(SHARED)]
    assert len(util) == 1 and "pod_uid" not in util[0].labels


def test_the_nvml_pass_reads_each_process_once_with_its_memory_and_latest_utilisation() -> None:
    processes = {p.pid: p for p in _nvml().sample(processes=True)[SHARED].processes}
    assert set(processes) == {1001, 1002, 2001, 3001, 4001, 5001}
    assert (processes[1001].used_memory_bytes, processes[1001].sm_util_percent) == (2048 << 20, 30)


@pytest.mark.parametrize(
    ("text", "owner"),
    [
        (f"0::/kubepods.slice/kubepods-pod{UID_A.replace('-', '_')}.slice/cri-containerd-{CTR_A1}.scope\n",
         (UID_A, CTR_A1)),
        (f"11:devices:/kubepods/burstable/pod{UID_B}/{CTR_B}\n", (UID_B, CTR_B)),
        (f"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_A.replace('-', '_')}.slice/"
         f"crio-{CTR_B}.scope\n", (UID_A, CTR_B)),
        (f"0::/kubepods/pod{UID_B}\n", (UID_B, "")),
        ("0::/user.slice/user-1000.slice/session-1.scope\n", None),
    ],
)
def test_a_processes_pod_and_container_come_from_its_cgroup(
    tmp_path: Path, text: str, owner: tuple[str, str] | None
) -> None:
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "cgroup").write_text(text)
    assert owner_of(str(tmp_path), 42) == owner
    assert owner_of(str(tmp_path), 43) is None


def test_pod_metadata_keeps_container_ids_without_the_runtime_scheme() -> None:
    item = {"metadata": {"namespace": "ns", "name": "a", "uid": UID_A},
            "status": {"containerStatuses": [{"name": "main", "containerID": f"containerd://{CTR_A1}"},
                                             {"name": "starting"}]}}
    assert _metadata(item) == (("ns", "a"), PodMetadata(UID_A, {}, {CTR_A1: "main"}))
