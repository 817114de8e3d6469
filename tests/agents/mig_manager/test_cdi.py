"""CDI after a MIG change: nvidia-smi (which creates the `nvidia-cap*` nodes) before the management spec."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpu_operator.agents.mig_manager.cdi import MANAGEMENT_SPEC, CdiError, CdiRefresh
from gpu_operator.agents.mig_manager.config import load_config
from gpu_operator.agents.mig_manager.hardware import MigHardware
from gpu_operator.agents.mig_manager.reconfigure import REASON_ANNOTATION, STATE_LABEL, Reconfigurer, Settings
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
from gpu_operator.mig import default_config, to_yaml
from tests.agents.kube.fake_apiserver import FakeApiServer

NODE = "gpu-node-0"
NAMESPACE = "gpu-operator"
HOOK = "/usr/local/nvidia/toolkit/nvidia-cdi-hook"
CTK = "/usr/local/nvidia/toolkit/nvidia-ctk"


def _devices(library: SimulatedLibrary) -> Counter[str]:
    gpu = library.profile.gpus[0]
    return Counter(p.profile for p in (gpu.mig.devices if gpu.mig else ()))


class Host:
    """The host's commands: each is logged with GPU 0's MIG devices at that moment; `refuse` names one that fails."""

    def __init__(self, library: SimulatedLibrary, refuse: str = "") -> None:
        self.library = library
        self.refuse = refuse
        self.log: list[tuple[list[str], Counter[str]]] = []

    def __call__(self, command: Sequence[str]) -> tuple[int, str]:
        self.log.append((list(command), _devices(self.library)))
        if self.refuse and self.refuse in command:
            return 9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
        return 0, ""


def test_nvidia_smi_runs_after_the_change_and_before_the_management_spec(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    """NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go, `Run` then `runNvidiaSMI` and `handleCDI`:
    with CDI on, nvidia-smi runs (chrooted into the driver root when it is also the device root) after the new
    layout is applied and before `nvidia-ctk system create-device-nodes` and `nvidia-ctk cdi generate`, so the
    spec lists the MIG capability nodes (mig-parted PR #82: CreateContainerError without them)."""
    config = tmp_path / "config.yaml"
    config.write_text(to_yaml(default_config()))
    host = Host(library)
    env = {"NVIDIA_CDI_HOOK_PATH": HOOK, "NVIDIA_DRIVER_ROOT": "/run/nvidia/driver"}
    manager = Reconfigurer(server.client(), MigHardware(library), load_config(config),
                           Settings(NODE, NAMESPACE, poll_interval=0.01),
                           after_apply=CdiRefresh.from_environment(env, host))
    assert manager.reconfigure("all-3g.40gb") == "success"
    applied = Counter({"3g.40gb": 2})
    assert host.log == [
        (["chroot", "/host/run/nvidia/driver", "nvidia-smi"], applied),
        (["chroot", "/host", CTK, "system", "create-device-nodes", "--control-devices",
          "--dev-root=/run/nvidia/driver"], applied),
        (["chroot", "/host", CTK, "cdi", "generate", "--mode=management", "--driver-root=/run/nvidia/driver",
          "--dev-root=/run/nvidia/driver", f"--nvidia-cdi-hook-path={HOOK}", f"--output={MANAGEMENT_SPEC}"], applied),
    ]


def test_a_failing_nvidia_smi_is_failed_and_no_spec_is_written(
    server: FakeApiServer, library: SimulatedLibrary, tmp_path: Path
) -> None:
    """NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go, `Run`: an error from `runNvidiaSMI` sets
    `failed` before `handleCDI` runs."""
    config = tmp_path / "config.yaml"
    config.write_text(to_yaml(default_config()))
    host = Host(library, refuse="nvidia-smi")
    manager = Reconfigurer(server.client(), MigHardware(library), load_config(config),
                           Settings(NODE, NAMESPACE, poll_interval=0.01),
                           after_apply=CdiRefresh.from_environment({"NVIDIA_CDI_HOOK_PATH": HOOK}, host))
    assert manager.reconfigure("all-3g.40gb") == "failed"
    assert [command for command, _ in host.log] == [["chroot", "/host", "nvidia-smi"]]  # a host driver: its root
    node = server.get("nodes", NODE)
    assert node is not None and node["metadata"]["labels"][STATE_LABEL] == "failed"
    assert node["metadata"]["annotations"][REASON_ANNOTATION].startswith(
        "nvidia-smi failed (9): NVIDIA-SMI has failed")


def _driver_root(host_root: Path, *, smi: bool = True) -> None:
    """A driver container's root under the host's: NVML behind its soname link, nvidia-smi in usr/bin."""
    lib = host_root / "run/nvidia/driver/usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libnvidia-ml.so.595.91.07").write_bytes(b"\x7fELF")
    (lib / "libnvidia-ml.so.1").symlink_to("libnvidia-ml.so.595.91.07")
    if smi:
        (host_root / "run/nvidia/driver/usr/bin").mkdir(parents=True)
        (host_root / "run/nvidia/driver/usr/bin/nvidia-smi").write_bytes(b"\x7fELF")


def test_nvidia_smi_with_the_driver_library_preloaded_when_the_device_root_is_the_hosts(tmp_path: Path) -> None:
    """NVIDIA/mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go `runNvidiaSMI` and cmd/nvidia-mig-manager
    find.go `getDriverLibraryPath` / `getNvidiaSMIPath` / `findFile`: when the driver root is not the device root,
    nvidia-smi and libnvidia-ml.so.1 (its link resolved) are found in the driver root and nvidia-smi runs in the
    host's root with that library preloaded, so the capability nodes appear in the host's /dev."""
    _driver_root(tmp_path)
    refresh = CdiRefresh(hook_path=HOOK, driver_root="/run/nvidia/driver", dev_root="/", host_root=str(tmp_path))
    assert refresh.nvidia_smi() == [
        "chroot", str(tmp_path), "env", "LD_PRELOAD=/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.595.91.07",
        "/run/nvidia/driver/usr/bin/nvidia-smi",
    ]
    assert refresh.commands()[0] == refresh.nvidia_smi()


def test_a_driver_root_without_nvidia_smi_is_a_clear_error(tmp_path: Path) -> None:
    """NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager/find.go `findFile`: a file in none of the folders is an
    error naming it (NVIDIA's `getPathsForCDI` then refuses to start)."""
    _driver_root(tmp_path, smi=False)
    refresh = CdiRefresh(hook_path=HOOK, driver_root="/run/nvidia/driver", dev_root="/", host_root=str(tmp_path))
    with pytest.raises(CdiError, match=r"no nvidia-smi in the driver root /run/nvidia/driver \(looked in /, /usr/bin"):
        refresh()
