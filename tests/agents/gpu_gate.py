"""The pytest hooks behind the `gpu` marker: skip only on machines without a GPU, and `GPU_REQUIRED=1`.

A test marked `gpu` runs against the real driver. Whether it runs is decided before it starts, from the
machine's evidence (`tests.agents.gpu_machine`), never from what our code does:

* no GPU here, `GPU_REQUIRED` unset: the test is skipped, with the reason;
* no GPU here, `GPU_REQUIRED=1`: the test fails at setup;
* a GPU here: the test runs, and anything our code raises is a failure like in any other test.

With `GPU_REQUIRED=1` a `gpu` test may not skip for any other reason either (a skip inside the test, a missing
tool): the report is turned into a failure that keeps the skip's reason. `tests/conftest.py` imports these hooks;
a test of the switch itself loads them into a pytest run of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import pytest

from tests.agents.gpu_machine import (
    GPU_REQUIRED_ENV,
    GpuEvidence,
    find_gpu_evidence,
    gpu_required,
)

__all__ = [
    "GPU_MARKER",
    "machine_evidence",
    "pytest_configure",
    "pytest_runtest_makereport",
    "pytest_runtest_setup",
]

GPU_MARKER = "gpu"

#: How the machine is inspected; a test of the switch replaces it to play a machine with or without a GPU.
machine_evidence: Callable[[], GpuEvidence] = find_gpu_evidence

_REQUIRED = pytest.StashKey[bool]()
_EVIDENCE = pytest.StashKey[GpuEvidence]()


def pytest_configure(config: pytest.Config) -> None:
    try:
        config.stash[_REQUIRED] = gpu_required()
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


def _evidence(config: pytest.Config) -> GpuEvidence:
    if _EVIDENCE not in config.stash:
        config.stash[_EVIDENCE] = machine_evidence()
    return config.stash[_EVIDENCE]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker(GPU_MARKER) is None:
        return
    evidence = _evidence(item.config)
    if evidence.present:
        return
    if item.config.stash[_REQUIRED]:
        pytest.fail(
            f"{GPU_REQUIRED_ENV}=1 but this machine has no NVIDIA GPU: {evidence.describe()}",
            pytrace=False,
        )
    pytest.skip(f"no NVIDIA GPU on this machine ({evidence.describe()}); {GPU_REQUIRED_ENV}=1 makes this a failure")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if not (report.skipped and item.config.stash[_REQUIRED] and item.get_closest_marker(GPU_MARKER)):
        return report
    if hasattr(report, "wasxfail"):
        return report
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"{GPU_REQUIRED_ENV}=1: a gpu test may not skip, and this one did: {reason}"
    return report
