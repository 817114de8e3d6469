"""Running whole Pulumi programs (a `__main__.py` and a `Pulumi.<stack>.yaml`) under mocks.

`run_program_file(program, stack_file)` executes the program as the Pulumi Python host would, with the stack
file's config (object values JSON-encoded, as the engine passes them), and returns what it registered, the
stack outputs it exported, which of them are secret and which are unknown (in preview). `resource_list(recording)` is the golden form: type, name, parent type and the inputs
that matter, for every registration.
"""

from __future__ import annotations

import json
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime.settings import get_root_resource

from tests.support.azure_mocks import AzureMocks, run_azure_program
from tests.support.pulumi_mocks import Recording, Registration
from tests.support.reference import REPO_ROOT

__all__ = ["STACKS_DIR", "StackRun", "stack_files", "stack_config", "run_program_file", "run_stack", "resource_list"]

STACKS_DIR = REPO_ROOT / "stacks"


@dataclass
class StackRun:
    recording: Recording
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)
    unknown_outputs: set[str] = field(default_factory=set)


def stack_files(directory: Path = STACKS_DIR) -> dict[str, Path]:
    """`env` → `Pulumi.<env>.yaml` in the directory."""
    return {path.name.split(".")[1]: path for path in sorted(directory.glob("Pulumi.*.yaml"))}


def stack_config(stack_file: Path) -> dict[str, str]:
    """The stack file's config as the engine hands it to the program: strings, objects as JSON."""
    config = (yaml.safe_load(stack_file.read_text()) or {}).get("config", {})
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}


def run_program_file(program: Path, stack_file: Path, *, project: str, mocks: AzureMocks | None = None) -> StackRun:
    """Run `program` (a `__main__.py`) with the stack file's config; collect registrations and exports."""
    run = StackRun(Recording())

    def execute() -> pulumi.Output[Any] | None:
        root = get_root_resource()
        root.outputs.clear()  # type: ignore[union-attr]
        runpy.run_path(str(program), run_name="__main__")
        exported = dict(root.outputs)  # type: ignore[union-attr]

        async def collect() -> None:
            for key, value in exported.items():
                output = pulumi.Output.from_input(value)
                if not await output.is_known():
                    run.unknown_outputs.add(key)
                    continue
                run.outputs[key] = await output.future()
                if await output.is_secret():
                    run.secret_outputs.add(key)

        return pulumi.Output.from_input(collect())

    run_azure_program(execute, project=project, stack=stack_file.name.split(".")[1],
                      config=stack_config(stack_file), recording=run.recording, mocks=mocks)
    return run


def run_stack(env: str) -> StackRun:
    """Run the project's program (`stacks/__main__.py`) for one environment."""
    return run_program_file(STACKS_DIR / "__main__.py", stack_files()[env], project="gpu-operator")


def _plain(value: Any) -> Any:
    """Recorded inputs with protobuf's float counts turned back into integers, keys sorted."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _plain(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _key_inputs(registration: Registration) -> dict[str, Any]:
    inputs = registration.inputs
    if registration.type.startswith(("azure-native:", "gpu-operator:")):
        return _plain(inputs)
    if registration.type == "kubernetes:helm.sh/v4:Chart":
        return {key: inputs[key] for key in ("chart", "version", "namespace")}
    if registration.type.startswith("kubernetes:"):
        meta = inputs.get("metadata", {})
        keys = {key: meta[key] for key in ("name", "namespace") if key in meta}
        if registration.type == "kubernetes:apps/v1:DaemonSet":
            pod = inputs["spec"]["template"]["spec"]
            keys.update(nodeSelector=pod.get("nodeSelector", {}), tolerations=pod.get("tolerations", []))
        return _plain(keys)
    return {}


def _options(registration: Registration) -> dict[str, Any]:
    """The resource options the engine acts on (protect, retainOnDelete, ignoreChanges, hooks), where set."""
    options = {
        "protect": registration.protect,
        "retainOnDelete": registration.retain_on_delete,
        "ignoreChanges": list(registration.ignore_changes),
        "hooks": {kind: list(names) for kind, names in registration.hooks.items()},
    }
    return {key: value for key, value in options.items() if value}


def _type_of(urn: str) -> str:
    return urn.split("::")[2].split("$")[-1] if urn else ""


def resource_list(recording: Recording) -> list[dict[str, Any]]:
    """Every registration as {type, name, parent, inputs, options}, sorted by name and type (registration order
    depends on when outputs resolve); providers are listed without their inputs (credentials), options only where
    set."""
    entries = [
        {"type": r.type, "name": r.name, "parent": _type_of(r.parent), "inputs": _key_inputs(r),
         **({"options": _options(r)} if _options(r) else {})}
        for r in recording.registrations
    ]
    return sorted(entries, key=lambda entry: (entry["name"], entry["type"]))
