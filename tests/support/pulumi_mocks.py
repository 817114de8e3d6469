"""Running Pulumi programs under mocks and recording what they register.

`run_program(fn)` runs `fn` inside `@pulumi.runtime.test` with a monitor that records every registration: type,
name, URN, parent URN, provider reference, explicit dependencies and inputs (camelCase, as the engine sees them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

import pulumi
from pulumi.runtime.mocks import MockMonitor

__all__ = ["Registration", "RecordingMocks", "run_program", "Recording"]


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


class RecordingMocks(pulumi.runtime.Mocks):
    """Echo inputs back as outputs, with a predictable id."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return {}


@dataclass
class Recording:
    registrations: list[Registration] = field(default_factory=list)

    def of_type(self, prefix: str) -> list[Registration]:
        return [r for r in self.registrations if r.type.startswith(prefix)]

    def by_urn(self) -> dict[str, Registration]:
        return {r.urn: r for r in self.registrations}

    def named(self, name: str) -> Registration:
        matches = [r for r in self.registrations if r.name == name]
        assert len(matches) == 1, f"{len(matches)} registrations named {name}"
        return matches[0]


class _RecordingMonitor(MockMonitor):
    def __init__(self, mocks: pulumi.runtime.Mocks, recording: Recording) -> None:
        super().__init__(mocks)
        self._recording = recording

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            from google.protobuf import json_format

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
            ))
        return response


def run_program(program: Callable[[], Any], *, project: str = "gpu-operator", stack: str = "test",
                config: dict[str, str] | None = None, recording: Recording | None = None) -> Recording:
    """Run `program` under mocks and return what it registered (pass `recording` to keep it when it raises)."""
    recording = recording if recording is not None else Recording()
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False,
                             monitor=_RecordingMonitor(mocks, recording))
    pulumi.runtime.set_all_config(config or {})
    try:
        @pulumi.runtime.test
        def _run() -> Any:
            return program()

        _run()
    finally:
        pulumi.runtime.set_all_config({})
    return recording
