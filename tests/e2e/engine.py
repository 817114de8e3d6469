"""A real Pulumi engine for the e2e tier, driven through the Automation API.

`make e2e-tools` builds the Pulumi CLI (v3.259.0), the Python, Node.js and YAML language hosts and Pulumi's
Kubernetes provider (4.32.0) into the tools' bin directory; the Python dynamic-provider launcher and the Python
host's exec script sit beside them. An :class:`Engine` gives each test module a `PULUMI_HOME` and a file backend of
its own (`file://`, the empty passphrase), installs the provider into that home from the built binary (automatic
plugin downloads are off: a plugin the engine cannot find is an error, never a download), and puts the bin
directory first on `PATH`, so the language hosts and the dynamic-provider launcher are the built ones.

Programs run as projects written to a temporary directory (:meth:`Engine.project`): the program folder is linked
in (the repository's `stacks/`, an example), the virtualenv is the e2e tier's (`.venv-e2e`, its SDKs pinned to the
built engine, see `tools/e2e/constraints.txt`), and stack files live in the project's own config folder, so
nothing is written into the repository. Each operation returns what the engine did, step by step, from its event
stream (:class:`Operation`): the op (`create`, `update`, `replace`, `delete`, `same`, ...), the URN and type, the
old and new inputs, and the warnings and errors it printed, with the wall-clock time the operation took.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from tests.e2e.tools import E2eTools
from tests.support.reference import REPO_ROOT

__all__ = ["ENGINE_PROGRAMS", "Engine", "EngineStack", "Operation", "Step", "missing_engine_programs", "E2E_VENV"]

#: What the engine needs beside the control plane, all built by `make e2e-tools` into its bin directory.
ENGINE_PROGRAMS = ("pulumi", "pulumi-language-python", "pulumi-language-python-exec", "pulumi-resource-pulumi-python",
                   "pulumi-language-nodejs", "pulumi-language-yaml", "pulumi-resource-kubernetes")
KUBERNETES_PROVIDER_VERSION = "4.32.0"
#: The e2e tier's virtualenv (`make e2e-venv`); the Pulumi programs run in it.
E2E_VENV = REPO_ROOT / ".venv-e2e"
#: Ops that change nothing.
UNCHANGED = frozenset({"same", "read", "refresh"})


def missing_engine_programs(tools: E2eTools) -> list[str]:
    return [name for name in ENGINE_PROGRAMS if not (tools.bin_dir / name).is_file()]


@dataclass(frozen=True)
class Step:
    """One step of an operation, as the engine reported it before carrying it out."""

    op: str
    urn: str
    type: str
    inputs: Mapping[str, Any] | None
    old_inputs: Mapping[str, Any] | None
    parent: str
    diffs: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]

    @property
    def object_key(self) -> tuple[str, str, str, str] | None:
        """(apiVersion, kind, namespace, name) of a Kubernetes object step, from its inputs."""
        if not self.type.startswith("kubernetes:") or self.type.startswith("kubernetes:helm.sh/"):
            return None
        _, group_version, kind = self.type.split(":")
        inputs = self.inputs or self.old_inputs or {}
        meta = inputs.get("metadata") or {}
        return group_version.removeprefix("core/"), kind, meta.get("namespace") or "", meta.get("name", "")


@dataclass
class Operation:
    """What one engine operation did: its steps, diagnostics, outputs and how long it took."""

    kind: str
    steps: list[Step] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stdout: str = ""
    policy_events: list[auto.events.PolicyEvent] = field(default_factory=list)
    """The policy violations the engine reported (`--policy-pack`), as events: pack, policy, enforcement, message."""
    finished: list[str] = field(default_factory=list)
    """The URNs of the steps that completed, in the order the engine reported them done."""
    durations: dict[str, float] = field(default_factory=dict)
    """Seconds from each step's start to its end, as the event stream showed them (the events carry whole seconds
    only, so they are timed when they arrive)."""
    _started: dict[str, float] = field(default_factory=dict, repr=False)

    def slowest(self, count: int = 5) -> list[tuple[str, float]]:
        """The `count` longest steps: (name, seconds)."""
        ranked = sorted(self.durations.items(), key=lambda item: item[1], reverse=True)[:count]
        return [(urn.rsplit("::", 1)[-1], seconds) for urn, seconds in ranked]

    @property
    def changed(self) -> list[Step]:
        return [step for step in self.steps if step.op not in UNCHANGED]

    def ops(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for step in self.steps:
            counts[step.op] = counts.get(step.op, 0) + 1
        return counts

    def collect(self, event: auto.EngineEvent) -> None:
        if event.resource_pre_event is not None:
            meta = event.resource_pre_event.metadata
            self._started[meta.urn] = time.monotonic()
            new, old = meta.new, meta.old
            self.steps.append(Step(
                op=meta.op.value if hasattr(meta.op, "value") else str(meta.op), urn=meta.urn, type=meta.type,
                inputs=new.inputs if new is not None else None, old_inputs=old.inputs if old is not None else None,
                parent=(new or old).parent if (new or old) is not None else "", diffs=tuple(meta.diffs or ()),
            ))
        elif event.diagnostic_event is not None:
            diagnostic = event.diagnostic_event
            if diagnostic.severity == "warning":
                self.warnings.append(diagnostic.message.strip())
            elif diagnostic.severity == "error":
                self.errors.append(diagnostic.message.strip())
        elif event.policy_event is not None:
            self.policy_events.append(event.policy_event)
        elif event.res_outputs_event is not None:
            urn = event.res_outputs_event.metadata.urn
            self.finished.append(urn)
            if urn in self._started:
                self.durations[urn] = time.monotonic() - self._started[urn]


class EngineStack:
    """One stack of a project under the engine."""

    def __init__(self, engine: Engine, project_dir: Path, name: str, stack: auto.Stack) -> None:
        self.engine = engine
        self.project_dir = project_dir
        self.name = name
        self.stack = stack

    @property
    def stack_file(self) -> Path:
        settings = yaml.safe_load((self.project_dir / "Pulumi.yaml").read_text())
        return self.project_dir / settings.get("stackConfigDir", ".") / f"Pulumi.{self.name}.yaml"

    def set_config(self, config: Mapping[str, Any]) -> None:
        """Write the stack's whole config (structured values as they are); the file's other keys (the secrets
        provider's `encryptionsalt`) stay."""
        self.stack_file.parent.mkdir(parents=True, exist_ok=True)
        document = yaml.safe_load(self.stack_file.read_text()) if self.stack_file.exists() else None
        document = {**(document or {}), "config": dict(config)}
        self.stack_file.write_text(yaml.safe_dump(document, sort_keys=False))

    def _run(self, kind: str, call: Any, **kwargs: Any) -> Operation:
        operation = Operation(kind)
        started = time.monotonic()
        try:
            result = call(on_event=operation.collect, color="never", **kwargs)
        except auto.CommandError as error:
            operation.seconds = time.monotonic() - started
            raise EngineError(kind, self.name, str(error), operation) from None
        operation.seconds = time.monotonic() - started
        operation.stdout = getattr(result, "stdout", "")
        return operation

    def preview(self, *, expect_no_changes: bool = False, policy_packs: Iterable[Path] = (),
                policy_pack_configs: Iterable[Path] = ()) -> Operation:
        return self._run("preview", self.stack.preview, expect_no_changes=expect_no_changes or None,
                         policy_packs=[str(p) for p in policy_packs] or None,
                         policy_pack_configs=[str(p) for p in policy_pack_configs] or None)

    def up(self, *, policy_packs: Iterable[Path] = ()) -> Operation:
        return self._run("up", self.stack.up, policy_packs=[str(p) for p in policy_packs] or None)

    def refresh(self, *, expect_no_changes: bool = False) -> Operation:
        return self._run("refresh", self.stack.refresh, expect_no_changes=expect_no_changes or None)

    def destroy(self) -> Operation:
        """A plain `pulumi destroy`: the program is not run (as a user's `pulumi destroy --yes`)."""
        return self._run("destroy", self.stack.destroy)

    def outputs(self) -> dict[str, Any]:
        return {key: value.value for key, value in self.stack.outputs().items()}

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """The pulumi CLI itself, in the project, on this stack (for what the Automation API does not cover)."""
        return self.engine.cli(*args, "--stack", self.name, cwd=self.project_dir, check=check)


class EngineError(RuntimeError):
    """An engine operation failed; carries what it did before failing."""

    def __init__(self, kind: str, stack: str, output: str, operation: Operation) -> None:
        super().__init__(f"pulumi {kind} of stack {stack} failed:\n{output[-6000:]}")
        self.output = output
        self.operation = operation


class Engine:
    """The built engine with a PULUMI_HOME and a file backend of its own, under `workdir`."""

    def __init__(self, tools: E2eTools, workdir: Path) -> None:
        self.tools = tools
        self.workdir = workdir
        self.home = workdir / "pulumi-home"
        self.state = workdir / "state"
        self.projects = workdir / "projects"
        for folder in (self.home, self.state, self.projects):
            folder.mkdir(parents=True, exist_ok=True)
        self.env = {
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": f"file://{self.state}",
            "PULUMI_CONFIG_PASSPHRASE": "",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "PATH": f"{tools.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            # the stack's Kubernetes provider takes the kubeconfig from config; an ambient one must never be used
            "KUBECONFIG": str(workdir / "no-ambient-kubeconfig"),
        }
        self.command = auto.PulumiCommand(root=str(tools.bin_dir.parent))
        self.cli("plugin", "install", "resource", "kubernetes", KUBERNETES_PROVIDER_VERSION,
                 "--file", str(tools.bin_dir / "pulumi-resource-kubernetes"))

    def cli(self, *args: str, cwd: Path | None = None, check: bool = True,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **self.env}
        result = subprocess.run([str(self.tools.bin_dir / "pulumi"), *args, "--non-interactive"], cwd=cwd or self.workdir,
                                env=env, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError(f"pulumi {' '.join(args)} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                               f"{result.stderr[-3000:]}")
        return result

    def project(self, name: str, program: Path) -> Path:
        """A project folder for the Python `program` (a folder), linked in as `program/`, with the e2e virtualenv,
        stack files under `config/` and `pulumi:disable-default-providers` as our stacks set it (a resource without
        an explicit provider is an error, never the ambient cluster)."""
        folder = self.projects / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        (folder / "program").symlink_to(program, target_is_directory=True)
        document: dict[str, Any] = {
            "name": name, "description": name, "main": "program/", "stackConfigDir": "config",
            "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": str(E2E_VENV)}},
            "config": {"pulumi:disable-default-providers": {"value": ["kubernetes"]}},
        }
        (folder / "Pulumi.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
        (folder / "config").mkdir()
        return folder

    def stack(self, project_dir: Path, name: str, config: Mapping[str, Any] | None = None) -> EngineStack:
        workspace = auto.LocalWorkspace(work_dir=str(project_dir), pulumi_home=str(self.home), env_vars=self.env,
                                        pulumi_command=self.command)
        stack = EngineStack(self, project_dir, name, auto.Stack.create_or_select(name, workspace))
        if config is not None:
            stack.set_config(config)
        return stack
