"""Pieces several operands share: the validation init containers, the runtime class rule, config-manager.

NVIDIA repeats these blocks across its per-operand manifests; they are defined once here so the status-file
chain (`/run/nvidia/validations/*-ready`) is spelled the same everywhere.
"""

from __future__ import annotations

from importlib.resources import files

from gpu_operator.render.context import RenderContext
from gpu_operator.render.k8s import Object, env_field, mount, privileged

__all__ = [
    "VALIDATIONS_DIR",
    "toolkit_validation_init",
    "wait_for_file_init",
    "apply_runtime_class",
    "node_name_env",
    "read_script",
    "SHELL",
]

VALIDATIONS_DIR = "/run/nvidia/validations"
SHELL = ["sh", "-c"]


def node_name_env() -> Object:
    """`NODE_NAME` from the downward API, a fresh dict per container (a shared one would alias in YAML and edits)."""
    return env_field("NODE_NAME", "spec.nodeName")


def read_script(name: str) -> str:
    """One of our operand scripts (package data under gpu_operator/render/scripts/)."""
    return files("gpu_operator.render").joinpath("scripts", name).read_text(encoding="utf-8")


def wait_for_file_init(name: str, ready_file: str, message: str, volume: str, mount_path: str) -> Object:
    """An init container that loops until `ready_file` exists (image filled in by the validation transform)."""
    return {
        "name": name,
        "image": "",
        "command": SHELL,
        "args": [f"until [ -f {ready_file} ]; do echo {message}; sleep 5; done"],
        "securityContext": privileged(),
        "volumeMounts": [mount(volume, mount_path, propagation="HostToContainer")],
    }


def toolkit_validation_init(volume: str = "run-nvidia-validations", mount_path: str = VALIDATIONS_DIR) -> Object:
    """`toolkit-validation`: waits for the validator's `toolkit-ready` (the nvidia runtime works)."""
    return wait_for_file_init(
        "toolkit-validation",
        f"{VALIDATIONS_DIR}/toolkit-ready",
        "waiting for nvidia container stack to be setup",
        volume,
        mount_path,
    )


def apply_runtime_class(ctx: RenderContext, pod: Object, pod_meta: Object) -> None:
    """Set `runtimeClassName`, or with the NRI plugin annotate each container for CDI injection instead."""
    if ctx.runtime_class is not None:
        pod["runtimeClassName"] = ctx.runtime_class
    if ctx.nri_plugin:
        annotations = pod_meta.setdefault("annotations", {})
        for container in pod["containers"]:
            annotations[f"nvidia.cdi.k8s.io/container.{container['name']}"] = "management.nvidia.com/gpu=all"

