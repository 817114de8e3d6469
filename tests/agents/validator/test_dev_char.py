"""Which NVIDIA device nodes can exist, from /proc/devices, the MIG minors and the GPU minors."""

from __future__ import annotations

from gpu_operator.agents.validator.dev_char import (
    DeviceNode,
    parse_device_majors,
    parse_mig_minors,
    possible_device_nodes,
)
from tests.agents.validator.helpers import MIG_MINORS, PROC_DEVICES


def test_majors_come_from_the_character_devices() -> None:
    assert parse_device_majors(PROC_DEVICES) == {"nvidia": 195, "nvidia-caps": 237, "nvidia-uvm": 508}
    old = "Character devices:\n195 nvidia-frontend\n510 nvidia-uvm\nBlock devices:\n259 nvidia-not-a-char\n"
    assert parse_device_majors(old) == {"nvidia-frontend": 195, "nvidia": 195, "nvidia-uvm": 510}


def test_mig_minors() -> None:
    minors = parse_mig_minors(MIG_MINORS + "garbage line here\n")
    assert minors["config"] == 1 and minors["gpu0/gi1/ci0/access"] == 13 and len(minors) == 7


def test_possible_nodes_for_two_gpus() -> None:
    majors = {"nvidia": 195, "nvidia-uvm": 508, "nvidia-caps": 237}
    nodes = possible_device_nodes("/run/nvidia/driver", (0, 1), majors, parse_mig_minors(MIG_MINORS))
    assert [(n.link_name, n.path) for n in nodes] == [
        ("195:254", "/run/nvidia/driver/dev/nvidia-modeset"),
        ("195:255", "/run/nvidia/driver/dev/nvidiactl"),
        ("508:0", "/run/nvidia/driver/dev/nvidia-uvm"),
        ("508:1", "/run/nvidia/driver/dev/nvidia-uvm-tools"),
        ("237:1", "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap1"),
        ("237:2", "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap2"),
        ("195:0", "/run/nvidia/driver/dev/nvidia0"),
        ("237:12", "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap12"),
        ("237:13", "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap13"),
        ("237:21", "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap21"),
        ("237:22", "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap22"),
        ("195:1", "/run/nvidia/driver/dev/nvidia1"),
        ("237:111", "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap111"),
    ]


def test_devices_of_an_unloaded_module_are_skipped() -> None:
    assert possible_device_nodes("/", (0,), {"nvidia": 195}, {}) == [
        DeviceNode("/dev/nvidia-modeset", 195, 254),
        DeviceNode("/dev/nvidiactl", 195, 255),
        DeviceNode("/dev/nvidia0", 195, 0),
    ]
