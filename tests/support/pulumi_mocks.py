"""Running Pulumi programs under mocks and recording what they register.

`run_program(fn)` runs `fn` inside `@pulumi.runtime.test` with a monitor that records every registration: type,
name, URN, parent URN, provider reference, explicit dependencies, inputs (camelCase, as the engine sees them) and
the resource options the engine acts on (protect, retainOnDelete, ignoreChanges, deletedWith, aliases, hooks).
It also records the outputs each component registers and a timeline of registrations and invokes.

The plain mocks echo inputs and run as `pulumi up` (`preview=False`). Two variants model what they hide:

* `preview=True` with `PreviewMocks`: a resource being created has no id and no computed outputs yet (the real
  engine's preview), so everything derived from them is unknown and `apply` callbacks on them never run;
* `SlowMocks`: resources resolve after a delay (per type), so an invoke or a dependency that does not really wait
  for a resource runs before it exists, and the timeline shows it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Mapping

import pulumi
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.mocks import MockMonitor

__all__ = [
    "Registration",
    "RecordingMocks",
    "PreviewMocks",
    "SlowMocks",
    "run_program",
    "Recording",
    "Event",
    "install_mocks",
]


@dataclass(frozen=True)
class Registration:
    type: str
    name: str
    urn: str
    parent: str
    provider: str
    dependencies: tuple[str, ...]
    inputs: dict[str, Any]
    custom: bool
    protect: bool = False
    retain_on_delete: bool = False
    ignore_changes: tuple[str, ...] = ()
    deleted_with: str = ""
    alias_names: tuple[str, ...] = ()
    hooks: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Event:
    """One step of the timeline: `register` (asked), `resolved` (the provider answered) or `invoke`."""

    kind: str
    subject: str


class RecordingMocks(pulumi.runtime.Mocks):
    """Echo inputs back as outputs, with a predictable id."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        return {}


class PreviewMocks(RecordingMocks):
    """A preview of a first deployment: new resources have no id and only their inputs (computed fields unknown).

    Run with `preview=True`. Providers and stack references still resolve (the engine knows them at preview).
    """

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ.startswith("pulumi:"):
            return super().new_resource(args)
        return "", dict(args.inputs)


class SlowMocks(RecordingMocks):
    """Resources of the given type prefixes take `delays[prefix]` seconds to be created."""

    def __init__(self, delays: Mapping[str, float]) -> None:
        self.delays = dict(delays)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        for prefix, seconds in self.delays.items():
            if args.typ.startswith(prefix):
                time.sleep(seconds)
                break
        return super().new_resource(args)


@dataclass
class Recording:
    registrations: list[Registration] = field(default_factory=list)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Outputs each component registered (`register_outputs`), by URN."""
    timeline: list[Event] = field(default_factory=list)

    def of_type(self, prefix: str) -> list[Registration]:
        return [r for r in self.registrations if r.type.startswith(prefix)]

    def by_urn(self) -> dict[str, Registration]:
        return {r.urn: r for r in self.registrations}

    def named(self, name: str) -> Registration:
        matches = [r for r in self.registrations if r.name == name]
        assert len(matches) == 1, f"{len(matches)} registrations named {name}"
        return matches[0]

    def position(self, kind: str, subject: str) -> int:
        """Index of the first timeline event of this kind and subject (resource name or invoke token)."""
        for index, event in enumerate(self.timeline):
            if event == Event(kind, subject):
                return index
        raise AssertionError(f"no {kind} event for {subject}")


def _hooks(request: Any) -> dict[str, tuple[str, ...]]:
    if not request.HasField("hooks"):
        return {}
    hooks = json_format.MessageToDict(request.hooks, preserving_proto_field_name=True)
    return {kind: tuple(names) for kind, names in hooks.items()}


class _RecordingMonitor(MockMonitor):
    def __init__(self, mocks: pulumi.runtime.Mocks, recording: Recording) -> None:
        super().__init__(mocks)
        self._recording = recording
        self._lock = threading.Lock()

    def _event(self, kind: str, subject: str) -> None:
        with self._lock:
            self._recording.timeline.append(Event(kind, subject))

    def RegisterResource(self, request: Any) -> Any:
        self._event("register", request.name)
        response = super().RegisterResource(request)
        self._event("resolved", request.name)
        if request.type != "pulumi:pulumi:Stack":
            inputs = json_format.MessageToDict(request.object) if request.object else {}
            self._recording.registrations.append(Registration(
                type=request.type,
                name=request.name,
                urn=response.urn,
                parent=request.parent,
                provider=request.provider,
                dependencies=tuple(request.dependencies),
                inputs=inputs,
                custom=request.custom,
                protect=request.protect,
                retain_on_delete=request.retainOnDelete,
                ignore_changes=tuple(request.ignoreChanges),
                deleted_with=request.deletedWith,
                alias_names=tuple(a.spec.name for a in request.aliases if a.spec.name),
                hooks=_hooks(request),
            ))
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        outputs = json_format.MessageToDict(request.outputs) if request.outputs else {}
        with self._lock:
            self._recording.outputs[request.urn] = outputs
        return super().RegisterResourceOutputs(request)

    def Invoke(self, request: Any) -> Any:
        self._event("invoke", request.tok)
        return super().Invoke(request)

    def RegisterResourceHook(self, request: Any) -> Any:
        """A hook's registration (the hooks a resource binds are recorded from its own registration)."""
        parent = getattr(super(), "RegisterResourceHook", None)
        return parent(request) if parent is not None else empty_pb2.Empty()


def _callbacks_for_old_sdks(monitor: MockMonitor) -> None:
    """Pulumi's SDK before 3.26x gives mocks no callback server, so a program that binds a resource hook or a
    transform fails under them ("No callback server registered"); the e2e tier pins such an SDK (3.259, the built
    engine's). Hand the runtime one that registers callbacks with the recording monitor; the mocks never call back."""
    if hasattr(MockMonitor, "RegisterResourceHook"):
        return
    from pulumi.runtime import settings
    from pulumi.runtime._callbacks import _CallbackServicer

    settings.SETTINGS.callbacks = _CallbackServicer(monitor)  # type: ignore[arg-type]


def install_mocks(mocks: pulumi.runtime.Mocks, recording: Recording, *, project: str, stack: str,
                  preview: bool) -> None:
    """Install `mocks` behind a recording monitor."""
    monitor = _RecordingMonitor(mocks, recording)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    _callbacks_for_old_sdks(monitor)


def run_program(program: Callable[[], Any], *, project: str = "gpu-operator", stack: str = "test",
                config: dict[str, str] | None = None, recording: Recording | None = None,
                mocks: pulumi.runtime.Mocks | None = None, preview: bool = False) -> Recording:
    """Run `program` under mocks and return what it registered (pass `recording` to keep it when it raises)."""
    recording = recording if recording is not None else Recording()
    mocks = mocks if mocks is not None else (PreviewMocks() if preview else RecordingMocks())
    install_mocks(mocks, recording, project=project, stack=stack, preview=preview)
    pulumi.runtime.set_all_config(config or {})
    try:
        @pulumi.runtime.test
        def _run() -> Any:
            return program()

        _run()
    finally:
        pulumi.runtime.set_all_config({})
    return recording
