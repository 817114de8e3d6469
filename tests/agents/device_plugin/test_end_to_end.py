"""The plugin against a fake kubelet over real gRPC on unix sockets, as the kubelet drives it.

Each test starts the Registration service in a temporary device-plugins directory, runs the plugin set on a
simulated node, receives the registrations, opens `ListAndWatch` and calls `Allocate` and
`GetPreferredAllocation` on the plugin's own socket. Every server and stream is stopped when the test ends.
"""

from __future__ import annotations

import os
import queue
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from gpu_operator.agents.device_plugin import DeviceError, PluginManager, resolve_settings
from gpu_operator.agents.device_plugin import deviceplugin_pb2 as pb
from gpu_operator.agents.device_plugin.allocate import mig_minors
from gpu_operator.agents.device_plugin.server import API_VERSION
from tests.agents.device_plugin.fake_mps import fake_mps
from tests.support.cdi_cache import load_cache
from tests.support.fake_driver_root import can_make_device_nodes, make_driver_root
from tests.agents.device_plugin.harness import FakeKubelet, InjectableNvml, PluginClient, short_tempdir, xid

CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")


@dataclass
class Node:
    kubelet: FakeKubelet
    manager: PluginManager
    nvml: InjectableNvml
    directory: str
    dev_root: str

    def client(self, resource: str) -> PluginClient:
        name = resource.removeprefix("nvidia.com/")
        return PluginClient(os.path.join(self.directory, f"nvidia-{name}.sock"))


def _write_mig_minors(directory: str) -> None:
    caps = os.path.join(directory, "proc", "driver", "nvidia-caps")
    os.makedirs(caps)
    with open(os.path.join(caps, "mig-minors"), "w") as minors:
        for gpu in range(8):
            for gi in range(1, 15):
                minors.write(f"gpu{gpu}/gi{gi}/access {gpu * 100 + gi * 2}\n")
                minors.write(f"gpu{gpu}/gi{gi}/ci0/access {gpu * 100 + gi * 2 + 1}\n")


@contextmanager
def node(profile: str, cli: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None,
         config: str | None = None, dev_nodes: tuple[str, ...] = (), driver: bool = False) -> Iterator[Node]:
    """A simulated node; with `driver`, a driver root laid out like a real one (for the CDI specs) is its root."""
    if driver and not can_make_device_nodes():
        pytest.skip("creating character device nodes (mknod) is not permitted here")
    with short_tempdir() as directory:
        plugins = os.path.join(directory, "device-plugins")
        os.makedirs(plugins)
        dev_root = os.path.join(directory, "host")
        if driver:
            make_driver_root(Path(dev_root), minors=tuple(range(8)), mig_instances=tuple(
                (gpu, gi, 0) for gpu in range(8) for gi in range(1, 15)), proc_root=Path(directory) / "proc")
        else:
            os.makedirs(os.path.join(dev_root, "dev"))
            _write_mig_minors(directory)
        for name in (() if driver else CONTROL_NODES[:3]) + dev_nodes:
            open(os.path.join(dev_root, "dev", name), "w").close()
        arguments = {"kubelet_socket": os.path.join(plugins, "kubelet.sock"), "dev_root": dev_root,
                     "driver_root_ctr_path": dev_root, "proc_root": os.path.join(directory, "proc"),
                     "cdi_spec_dir": os.path.join(directory, "cdi"), **(cli or {})}
        if config is not None:
            path = os.path.join(directory, "config.yaml")
            with open(path, "w") as handle:
                handle.write(config)
            arguments["config_file"] = path
        settings = resolve_settings(arguments, environ or {})
        kubelet = FakeKubelet(plugins)
        kubelet.start()
        nvml = InjectableNvml(profile)
        manager = PluginManager(settings, nvml, environ or {})
        try:
            manager.start()
            yield Node(kubelet, manager, nvml, plugins, dev_root)
        finally:
            manager.stop()
            kubelet.stop()
            nvml.close()


@contextmanager
def client(n: Node, resource: str) -> Iterator[PluginClient]:
    c = n.client(resource)
    try:
        yield c
    finally:
        c.close()


def test_registration_and_list_and_watch_on_full_gpus() -> None:
    with node("h100-8x") as n:
        registration = n.kubelet.next_registration()
        assert registration.version == API_VERSION
        assert registration.resource_name == "nvidia.com/gpu"
        assert registration.endpoint == "nvidia-gpu.sock"
        assert registration.options.get_preferred_allocation_available
        assert not registration.options.pre_start_required
        with client(n, "nvidia.com/gpu") as c:
            listed = c.watch()
            gpus = n.nvml.devices()
            assert [d.ID for d in listed.devices] == [g.uuid for g in gpus]
            assert {d.health for d in listed.devices} == {"Healthy"}
            assert [d.topology.nodes[0].ID for d in listed.devices] == [g.pci.numa_node for g in gpus]
            options = c.stub.GetDevicePluginOptions(pb.Empty(), timeout=10)
            assert options.get_preferred_allocation_available and not options.pre_start_required


def test_envvar_allocate_with_device_specs_and_prestart() -> None:
    with node("h100-8x", cli={"pass_device_specs": "true"}) as n:
        n.kubelet.next_registration()
        gpus = n.nvml.devices()
        with client(n, "nvidia.com/gpu") as c:
            answer = c.allocate([gpus[1].uuid, gpus[3].uuid]).container_responses[0]
            assert dict(answer.envs) == {"NVIDIA_VISIBLE_DEVICES": f"{gpus[1].uuid},{gpus[3].uuid}"}
            assert not answer.mounts and not answer.cdi_devices and not answer.annotations
            specs = [(d.container_path, d.host_path, d.permissions) for d in answer.devices]
            expected = [(f"/dev/{name}", os.path.join(n.dev_root, "dev", name), "rw") for name in CONTROL_NODES[:3]]
            expected += [(f"/dev/nvidia{g.minor_number}", os.path.join(n.dev_root, f"dev/nvidia{g.minor_number}"), "rw")
                         for g in (gpus[1], gpus[3])]
            assert specs == expected  # nvidia-modeset is absent under the dev root, so not passed
            assert c.stub.PreStartContainer(pb.PreStartContainerRequest(devices_ids=[gpus[1].uuid]),
                                            timeout=10) == pb.PreStartContainerResponse()


def test_index_id_strategy_and_volume_mounts() -> None:
    cli = {"device_list_strategy": "volume-mounts", "device_id_strategy": "index"}
    with node("h100-8x", cli=cli) as n:
        n.kubelet.next_registration()
        gpus = n.nvml.devices()
        with client(n, "nvidia.com/gpu") as c:
            answer = c.allocate([gpus[2].uuid]).container_responses[0]
            assert dict(answer.envs) == {"NVIDIA_VISIBLE_DEVICES": "/var/run/nvidia-container-devices"}
            assert [(m.container_path, m.host_path) for m in answer.mounts] == [
                ("/var/run/nvidia-container-devices/2", "/dev/null")]


def _cdi_device(cdi_dir: str, name: str) -> dict[str, Any]:
    """The device a fully qualified CDI name resolves to in the spec directory, as a runtime resolves it."""
    cache = load_cache([Path(cdi_dir)])
    assert not cache.errors, cache.errors
    assert name in cache.devices, f"no CDI spec in {cdi_dir} defines {name}"
    spec = yaml.safe_load(cache.devices[name].read_text())
    return next(d for d in spec["devices"] if d["name"] == name.partition("=")[2])


def test_cdi_strategies_name_the_plugins_cdi_devices() -> None:
    cli = {"device_list_strategy": "cdi-annotations,cdi-cri", "gds_enabled": "true"}
    with node("h100-8x", cli=cli, dev_nodes=("nvidia-fs0", "nvidia-fs1"), driver=True) as n:
        n.kubelet.next_registration()
        gpus = n.nvml.devices()
        with client(n, "nvidia.com/gpu") as c:
            answer = c.allocate([gpus[0].uuid]).container_responses[0]
            names = [f"k8s.device-plugin.nvidia.com/gpu={gpus[0].uuid}", "k8s.device-plugin.nvidia.com/gds=all"]
            assert [d.name for d in answer.cdi_devices] == names
            (key, value), = answer.annotations.items()
            assert key.startswith("cdi.k8s.io/nvidia-device-plugin_")
            assert value == ",".join(names)
            assert dict(answer.envs) == {"NVIDIA_GDS": "enabled"}
            assert not answer.mounts
        cdi_dir = os.path.join(os.path.dirname(n.directory), "cdi")
        gpu = _cdi_device(cdi_dir, names[0])["containerEdits"]["deviceNodes"]
        assert gpu == [{"path": f"/dev/nvidia{gpus[0].minor_number}",
                        "hostPath": os.path.join(n.dev_root, f"dev/nvidia{gpus[0].minor_number}")}]
        gds = _cdi_device(cdi_dir, names[1])["containerEdits"]["deviceNodes"]
        assert [d["path"] for d in gds] == ["/dev/nvidia-fs0", "/dev/nvidia-fs1"]


def test_a_cdi_feature_without_its_device_nodes_fails_start_with_the_reason() -> None:
    cli = {"device_list_strategy": "cdi-cri", "gdrcopy_enabled": "true"}
    with pytest.raises(DeviceError, match="gdrcopy is enabled with a CDI device list strategy, but none of "
                                          "/dev/gdrdrv exists"), node("h100-8x", cli=cli, driver=True):
        pass


def test_mig_devices_named_by_index_resolve_in_the_written_spec() -> None:
    cli = {"device_list_strategy": "cdi-cri", "device_id_strategy": "index", "mig_strategy": "mixed"}
    with node("a100-4x-mixed-mig", cli=cli, driver=True) as n:
        registrations = n.kubelet.registered(len(n.manager.resources))
        resource = next(r for r in n.manager.resources if r.name.startswith("nvidia.com/mig-"))
        device = resource.devices[0]
        assert resource.name in registrations
        with client(n, resource.name) as c:
            answer = c.allocate([device.id]).container_responses[0]
        name, = [d.name for d in answer.cdi_devices]
        assert name == f"k8s.device-plugin.nvidia.com/gpu={device.index}"
        cdi_dir = os.path.join(os.path.dirname(n.directory), "cdi")
        nodes = [d["path"] for d in _cdi_device(cdi_dir, name)["containerEdits"]["deviceNodes"]]
        table = mig_minors(os.path.join(os.path.dirname(n.directory), "proc"))
        gi = f"gpu{device.minor}/gi{device.gpu_instance_id}"
        assert nodes == [f"/dev/nvidia{device.minor}", f"/dev/nvidia-caps/nvidia-cap{table[gi + '/access']}",
                         f"/dev/nvidia-caps/nvidia-cap{table[gi + '/ci0/access']}"]
        assert _cdi_device(cdi_dir, name.replace(device.index, device.uuid)) == {
            "name": device.uuid, "containerEdits": _cdi_device(cdi_dir, name)["containerEdits"]}


def test_two_containers_in_one_request_get_one_answer_each() -> None:
    with node("h100-8x") as n:
        n.kubelet.next_registration()
        gpus = n.nvml.devices()
        with client(n, "nvidia.com/gpu") as c:
            answers = c.allocate([gpus[0].uuid], [gpus[5].uuid]).container_responses
            assert [a.envs["NVIDIA_VISIBLE_DEVICES"] for a in answers] == [gpus[0].uuid, gpus[5].uuid]


def test_unknown_device_is_refused_with_its_name() -> None:
    with node("h100-8x") as n:
        n.kubelet.next_registration()
        with client(n, "nvidia.com/gpu") as c, pytest.raises(grpc.RpcError) as refused:
            c.allocate(["GPU-not-here"])
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "unknown device: GPU-not-here" in refused.value.details()


TIME_SLICING = """
version: v1
sharing:
  timeSlicing:
    failRequestsGreaterThanOne: true
    resources:
      - name: nvidia.com/gpu
        replicas: 4
"""


def test_time_slicing_advertises_replicas_spreads_them_and_refuses_two() -> None:
    with node("h100-8x", config=TIME_SLICING) as n:
        assert n.kubelet.next_registration().resource_name == "nvidia.com/gpu"
        gpus = n.nvml.devices()
        with client(n, "nvidia.com/gpu") as c:
            ids = [d.ID for d in c.watch().devices]
            assert len(ids) == 32
            assert ids[:4] == [f"{gpus[0].uuid}::{i}" for i in range(4)]
            one = c.allocate([f"{gpus[4].uuid}::3"]).container_responses[0]
            assert one.envs["NVIDIA_VISIBLE_DEVICES"] == gpus[4].uuid
            with pytest.raises(grpc.RpcError) as refused:
                c.allocate([f"{gpus[0].uuid}::0", f"{gpus[1].uuid}::0"])
            assert "maximum request size for shared resources is 1" in refused.value.details()
            # GPU 0 has two replicas in use: a preference for 8 puts one replica on each GPU, none on GPU 0 twice
            available = [i for i in ids if i not in (f"{gpus[0].uuid}::0", f"{gpus[0].uuid}::1")]
            chosen = c.preferred(available, [], 7)
            assert sorted(i.split("::")[0] for i in chosen) == sorted(g.uuid for g in gpus[1:])


RENAMED = """
version: v1
sharing:
  timeSlicing:
    renameByDefault: true
    resources:
      - {name: gpu, replicas: 2}
"""


def test_rename_by_default_serves_the_shared_name_on_its_own_socket() -> None:
    with node("h100-8x", config=RENAMED) as n:
        registration = n.kubelet.next_registration()
        assert (registration.resource_name, registration.endpoint) == ("nvidia.com/gpu.shared",
                                                                       "nvidia-gpu.shared.sock")
        with client(n, "nvidia.com/gpu.shared") as c:
            assert len(c.watch().devices) == 16
            # without failRequestsGreaterThanOne two replicas of different GPUs are fine
            gpus = n.nvml.devices()
            answer = c.allocate([f"{gpus[0].uuid}::0", f"{gpus[0].uuid}::1", f"{gpus[1].uuid}::0"])
            assert answer.container_responses[0].envs["NVIDIA_VISIBLE_DEVICES"] == f"{gpus[0].uuid},{gpus[1].uuid}"


def test_mps_mounts_the_pipe_and_shm_of_the_resource() -> None:
    config = "version: v1\nsharing:\n  mps:\n    resources:\n      - {name: gpu, replicas: 2}\n"
    with fake_mps() as mps, node("h100-8x", cli={"mps_root": "/run/nvidia/mps", "mps_root_ctr_path": mps.root},
                                 environ={"PATH": mps.bin_dir}, config=config) as n:
        n.kubelet.next_registration()
        gpus = n.nvml.devices()
        with client(n, "nvidia.com/gpu") as c:
            answer = c.allocate([f"{gpus[0].uuid}::1"]).container_responses[0]
            assert answer.envs["CUDA_MPS_PIPE_DIRECTORY"] == "/mps/nvidia.com/gpu/pipe"
            assert [(m.container_path, m.host_path) for m in answer.mounts] == [
                ("/mps/nvidia.com/gpu/pipe", "/run/nvidia/mps/nvidia.com/gpu/pipe"),
                ("/dev/shm", "/run/nvidia/mps/shm")]
            with pytest.raises(grpc.RpcError):  # MPS fails requests for more than one replica by default
                c.allocate([f"{gpus[0].uuid}::0", f"{gpus[1].uuid}::0"])


def test_mig_single_advertises_56_gpus_with_capability_device_specs() -> None:
    with node("a100-8x-mig", cli={"mig_strategy": "single", "pass_device_specs": "true"}) as n:
        assert n.kubelet.next_registration().resource_name == "nvidia.com/gpu"
        with client(n, "nvidia.com/gpu") as c:
            devices = c.watch().devices
            assert len(devices) == 56 and all(d.ID.startswith("MIG-") for d in devices)
            gpu = n.nvml.devices()[1]
            mig = gpu.mig_devices[2]
            answer = c.allocate([mig.uuid]).container_responses[0]
            assert answer.envs["NVIDIA_VISIBLE_DEVICES"] == mig.uuid
            paths = [d.container_path for d in answer.devices]
            gi = mig.gpu_instance_id
            assert paths[-3:] == [f"/dev/nvidia{gpu.minor_number}", f"/dev/nvidia-caps/nvidia-cap{100 + gi * 2}",
                                  f"/dev/nvidia-caps/nvidia-cap{100 + gi * 2 + 1}"]


def test_mig_mixed_advertises_profile_resources() -> None:
    with node("a100-4x-mixed-mig", cli={"mig_strategy": "mixed", "device_id_strategy": "index"}) as n:
        registered = n.kubelet.registered(4)
        assert sorted(registered) == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb",
                                      "nvidia.com/mig-3g.40gb"]
        assert registered["nvidia.com/mig-1g.10gb"].endpoint == "nvidia-mig-1g.10gb.sock"
        with client(n, "nvidia.com/mig-1g.10gb") as c:
            devices = c.watch().devices
            assert len(devices) == 9
            answer = c.allocate([devices[0].ID]).container_responses[0]
            assert answer.envs["NVIDIA_VISIBLE_DEVICES"] == "0:0"


def test_preferred_allocation_of_whole_gpus_stays_on_one_numa_node() -> None:
    with node("h100-8x") as n:
        n.kubelet.next_registration()
        gpus = n.nvml.devices()
        with client(n, "nvidia.com/gpu") as c:
            chosen = c.preferred([g.uuid for g in gpus], [gpus[5].uuid], 3)
            numa = {g.uuid: g.pci.numa_node for g in gpus}
            assert chosen[0] == gpus[5].uuid
            assert len(chosen) == 3 and len({numa[i] for i in chosen}) == 1


def test_kubelet_restart_is_followed_by_a_new_registration() -> None:
    with node("h100-8x") as n:
        first = n.kubelet.next_registration()
        n.kubelet.restart()
        again = n.kubelet.next_registration()
        assert (again.resource_name, again.endpoint) == (first.resource_name, first.endpoint)
        with client(n, "nvidia.com/gpu") as c:  # the new server answers on the same socket
            assert len(c.watch().devices) == 8


def test_plugin_started_before_the_kubelet_registers_when_it_appears() -> None:
    with node("h100-8x") as n:
        n.kubelet.next_registration()
        n.kubelet.stop()
        with pytest.raises(queue.Empty):
            n.kubelet.registrations.get(timeout=0.5)
        n.kubelet.start()
        assert n.kubelet.next_registration().resource_name == "nvidia.com/gpu"


def test_xid_turns_the_device_unhealthy_and_an_ignored_xid_does_not() -> None:
    with node("h100-8x", cli={"health_recovery_period": "0"}) as n:
        n.kubelet.next_registration()
        gpus = n.nvml.devices()
        with client(n, "nvidia.com/gpu") as c:
            c.watch()
            n.nvml.inject(xid(gpus[2], 13))  # an application fault: ignored by default
            with pytest.raises(queue.Empty):
                c.updates.get(timeout=0.6)
            n.nvml.inject(xid(gpus[2], 79))  # fallen off the bus
            update = c.next_update()
            health = {d.ID: d.health for d in update.devices}
            assert health[gpus[2].uuid] == "Unhealthy"
            assert [u for u, h in health.items() if h == "Unhealthy"] == [gpus[2].uuid]


def test_xid_on_a_mig_instance_marks_only_that_mig_device() -> None:
    with node("a100-8x-mig", cli={"mig_strategy": "single"}) as n:
        n.kubelet.next_registration()
        gpu = n.nvml.devices()[0]
        target = gpu.mig_devices[3]
        with client(n, "nvidia.com/gpu") as c:
            c.watch()
            n.nvml.inject(xid(gpu, 48, target.gpu_instance_id, target.compute_instance_id))
            unhealthy = [d.ID for d in c.next_update().devices if d.health == "Unhealthy"]
            assert unhealthy == [target.uuid]


def test_disabled_health_checks_ignore_every_xid() -> None:
    with node("h100-8x", environ={"DP_DISABLE_HEALTHCHECKS": "all"}) as n:
        n.kubelet.next_registration()
        gpus = n.nvml.devices()
        with client(n, "nvidia.com/gpu") as c:
            c.watch()
            n.nvml.inject(xid(gpus[0], 79))
            with pytest.raises(queue.Empty):
                c.updates.get(timeout=0.6)


def test_stop_ends_the_stream_and_removes_the_sockets() -> None:
    with node("h100-8x") as n:
        n.kubelet.next_registration()
        c = n.client("nvidia.com/gpu")
        try:
            c.watch()
            n.manager.stop()
            assert c.updates.get(timeout=10) is None
            assert os.listdir(n.directory) == ["kubelet.sock"]
        finally:
            c.close()
