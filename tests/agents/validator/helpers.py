"""A simulated node for the validator's tests: the host views it mounts, as a directory tree.

`node_tree` lays out `host/` (the host's root), `host-dev-char/`, `proc/` (devices, modules, MIG minors),
`sys/` (the nvidia module's refcnt) and `run-nvidia-driver/` (the containerized driver's install dir) under a
temporary directory, and returns the matching `Paths`. `context` builds a validator `Context` over it with the
simulated NVML, a recorded sleep, and (optionally) a client of the fake API server.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpu_operator.agents.kube import KubeClient
from gpu_operator.agents.validator import Context, Paths, Settings, Timing
from tests.agents.kube.fake_apiserver import FakeApiServer

PROC_DEVICES = """Character devices:
  1 mem
  4 tty
195 nvidia
237 nvidia-caps
508 nvidia-uvm

Block devices:
  8 sd
"""
MIG_MINORS = """config 1
monitor 2
gpu0/gi1/access 12
gpu0/gi1/ci0/access 13
gpu0/gi2/access 21
gpu0/gi2/ci0/access 22
gpu1/gi1/access 111
"""
MODULES = "nvidia_uvm 1527808 0 - Live 0x0\nnvidia 56111104 1 nvidia_uvm, Live 0x0\n"
NAMESPACE = "gpu-operator"
NODE = "gpu-node-1"
DEFAULT_TIMING = Timing()


@dataclass
class Node:
    """The tree and what the test observed."""

    root: Path
    paths: Paths
    sleeps: list[float] = field(default_factory=list)
    commands: list[list[str]] = field(default_factory=list)
    nodes_made: list[tuple[Path, int, int]] = field(default_factory=list)

    @property
    def status(self) -> Path:
        return self.root / "validations"

    @property
    def install_dir(self) -> Path:
        return self.root / "run-nvidia-driver"

    def install_host_driver(self, path: str = "usr/bin/nvidia-smi") -> None:
        binary = Path(self.paths.host_root) / path
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_text("#!/bin/sh\n")
        binary.chmod(0o755)

    def load_modules(self, *names: str) -> None:
        lines = "".join(f"{name} 16384 0 - Live 0x0\n" for name in names)
        Path(self.paths.proc, "modules").write_text(MODULES + lines)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def run(self, command: Any) -> int:
        self.commands.append(list(command))
        return 0

    def make_node(self, path: Path, major: int, minor: int) -> None:
        self.nodes_made.append((path, major, minor))


def node_tree(root: Path) -> Node:
    paths = Paths(
        host_root=str(root / "host"),
        host_dev_char=str(root / "host-dev-char"),
        proc=str(root / "proc"),
        sys=str(root / "sys"),
        mellanox_driver_ready=str(root / "mellanox" / ".driver-ready"),
    )
    (root / "host").mkdir()
    (root / "proc" / "driver" / "nvidia-caps").mkdir(parents=True)
    (root / "proc" / "devices").write_text(PROC_DEVICES)
    (root / "proc" / "modules").write_text(MODULES)
    (root / "proc" / "driver" / "nvidia-caps" / "mig-minors").write_text(MIG_MINORS)
    (root / "sys" / "module" / "nvidia").mkdir(parents=True)
    (root / "sys" / "module" / "nvidia" / "refcnt").write_text("1\n")
    (root / "run-nvidia-driver").mkdir()
    return Node(root, paths)


def make_settings(node: Node, **values: Any) -> Settings:
    defaults: dict[str, Any] = {
        "output_dir": str(node.status),
        "nvml": "fake:t4-1x",
        "node_name": NODE,
        "namespace": NAMESPACE,
        "driver_install_dir_ctr_path": str(node.install_dir),
    }
    return replace(Settings(), **{**defaults, **values})


def context(
    node: Node,
    server: FakeApiServer | None = None,
    timing: Timing = DEFAULT_TIMING,
    sleep: Callable[[float], None] | None = None,
    **values: Any,
) -> Context:
    def no_cluster(_: Settings) -> KubeClient:
        raise AssertionError("this check must not talk to the API server")

    ctx = Context(
        make_settings(node, **values),
        paths=node.paths,
        sleep=sleep or node.sleep,
        timing=timing,
        make_client=(lambda _: server.client()) if server is not None else no_cluster,
        run_command=node.run,
        make_node=node.make_node,
    )
    ctx.status.prepare()
    return ctx


def links(directory: str | Path) -> dict[str, str]:
    """`/dev/char` links: name -> target."""
    base = Path(directory)
    if not base.is_dir():
        return {}
    return {entry.name: str(entry.readlink()) for entry in sorted(base.iterdir()) if entry.is_symlink()}


def is_executable(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IXUSR)
