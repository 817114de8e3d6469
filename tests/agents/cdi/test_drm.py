"""A GPU's DRM nodes and by-path links, found as NVIDIA's toolkit finds them.

Follows go-nvlib v0.12.0 pkg/nvlib/device/device.go (`GetPCIBusID`), nvidia-container-toolkit v1.20.0
internal/info/drm/drm_devices.go (`GetDeviceNodesByBusID`) and internal/platform-support/dgpu/by-path-hooks.go
(byPathHookDiscoverer `deviceNodeLinks`).
"""

from __future__ import annotations

from pathlib import Path

from gpu_operator.agents.cdi.drm import by_path_links, drm_nodes, sysfs_bus_id


def test_the_bus_id_is_nvmls_lower_cased_with_a_zero_upper_domain_dropped() -> None:
    assert sysfs_bus_id("00000000:3B:00.0") == "0000:3b:00.0"
    assert sysfs_bus_id("00000001:00:00.0") == "0001:00:00.0"
    assert sysfs_bus_id("00010000:01:00.0") == "00010000:01:00.0", "a non-zero upper half is kept, as go-nvlib does"


def test_the_nodes_are_those_sysfs_lists_for_the_device(tmp_path: Path) -> None:
    drm = tmp_path / "bus/pci/devices/0000:3b:00.0/drm"
    for name in ("renderD129", "card2"):
        (drm / name).mkdir(parents=True)
    (tmp_path / "bus/pci/devices/0000:02:00.0/drm/card0").mkdir(parents=True)
    assert drm_nodes("0000:3b:00.0", str(tmp_path)) == ["/dev/dri/card2", "/dev/dri/renderD129"]
    assert drm_nodes("0000:5e:00.0", str(tmp_path)) == [], "no nvidia-drm binding: no DRM nodes"


def test_by_path_links_are_made_for_the_nodes_given_only(tmp_path: Path) -> None:
    by_path = tmp_path / "dev/dri/by-path"
    by_path.mkdir(parents=True)
    (by_path / "pci-0000:3b:00.0-card").symlink_to("../card2")
    (by_path / "pci-0000:3b:00.0-render").symlink_to("../renderD129")
    assert by_path_links("0000:3b:00.0", str(tmp_path), {"/dev/dri/card2", "/dev/dri/renderD129"}) == [
        "../card2::/dev/dri/by-path/pci-0000:3b:00.0-card", "../renderD129::/dev/dri/by-path/pci-0000:3b:00.0-render"]
    assert by_path_links("0000:3b:00.0", str(tmp_path), {"/dev/dri/card2"}) == [
        "../card2::/dev/dri/by-path/pci-0000:3b:00.0-card"], "a link to a node the device does not bring is left out"
    assert by_path_links("0000:5e:00.0", str(tmp_path), {"/dev/dri/card2"}) == []
