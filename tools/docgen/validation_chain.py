"""The validation chain on a node, drawn from the render: which operand waits for which file.

NVIDIA's operands come up in order on each node through the files in `/run/nvidia/validations`: the validator's
init containers check one layer each and write its file (`driver-validation` writes `driver-ready`, ...), and an
operand's own `<layer>-validation` init container waits for that file before its main container starts. The
picture is read from the DaemonSets the built-in default stack renders with every operand on, so it follows the
render.
"""

from __future__ import annotations

from gpu_operator.config import parse_config
from gpu_operator.render import render_operands

__all__ = ["VALIDATOR", "chain", "mermaid"]

VALIDATOR = "nvidia-operator-validator"
#: What each check of the validator looks at: the operand that provides it.
_CHECKED = {"nvidia_driver_daemonset": ("driver", "the driver it loads"),
            "nvidia_container_toolkit_daemonset": ("toolkit", "the runtime it configures"),
            "nvidia_device_plugin_daemonset": ("plugin", "the GPUs it advertises")}
_EVERY_OPERAND = {"operator": {"nodeStatusExporter": {"enabled": True}, "dcgm": {"enabled": True}}}


def _init_containers(daemonset: dict) -> list[str]:
    return [c["name"] for c in daemonset["spec"]["template"]["spec"].get("initContainers", [])]


def chain() -> tuple[list[str], dict[str, list[str]]]:
    """The validator's checks in order, and per other DaemonSet the validation files it waits for."""
    config = parse_config(_EVERY_OPERAND)
    daemonsets = [o for op in render_operands(config) for o in op.objects if o["kind"] == "DaemonSet"]
    checks: list[str] = []
    waits: dict[str, list[str]] = {}
    for daemonset in daemonsets:
        name = daemonset["metadata"]["name"]
        steps = [c.removesuffix("-validation") for c in _init_containers(daemonset) if c.endswith("-validation")]
        if name == VALIDATOR:
            checks = steps
        else:
            waits[name] = [f"{step}-ready" for step in steps]
    return checks, waits


def mermaid() -> str:
    """The chain as a Mermaid flowchart: the validator's checks writing their files, each operand after its file."""
    checks, waits = chain()
    lines = ["flowchart LR", f"  subgraph validator[\"{VALIDATOR}: init containers, in order\"]"]
    lines += [f"    {check}[\"{check}-validation\"] --> {check}_ready[(\"{check}-ready\")]" for check in checks]
    lines += [f"    {before}_ready --> {after}" for before, after in zip(checks, checks[1:])]
    lines.append("  end")
    for name, files in waits.items():
        node = name.replace("-", "_")
        lines.append(f"  {node}[\"{name}\"]")
        lines += [f"  {file.replace('-', '_')} --> {node}" for file in files]
    rendered = {name.replace("-", "_") for name in waits}
    lines += [f"  {operand} -. {what} .-> {check}" for operand, (check, what) in _CHECKED.items()
              if operand in rendered and check in checks]
    return "\n".join(lines) + "\n"
