"""The steps of `make gpu-check`, each a function of a :class:`CheckContext` returning a :class:`StepResult`.

1. `driver`: the machine shows an NVIDIA driver (device nodes or NVML, `tests.agents.gpu_machine`) and nvidia-smi
   lists its GPUs. Without it every other step is skipped and the check fails with "no NVIDIA driver: ...".
2. `pytest-gpu`: `GPU_REQUIRED=1 pytest -m gpu` (a skipped gpu test is a failure there).
3. `feature-discovery-vs-nvidia-smi`: the feature-discovery agent, once, to stdout; product, count, memory and
   driver labels against nvidia-smi.
4. `exporter-under-load-vs-nvidia-smi`: the metrics-exporter process while GPU 0 runs a short CUDA load
   (:mod:`tests.gpu.load`); identity labels, frame buffer, temperature and power against nvidia-smi, and GPU 0
   busy.
5. `device-plugin-allocates-a-gpu`: the device plugin registered with a fake kubelet (real gRPC on unix sockets)
   advertises nvidia-smi's GPUs and allocates GPU 0 with its device node.
6. `validator-host-driver`: `validator --component driver` finds the host's driver and writes `driver-ready`.
7. `cdi-spec-vs-nvidia-ctk`: only where `nvidia-ctk` and `cdi-apply` are found (`CDI_TOOLS=<dir>`, the e2e
   tools, or PATH); the device plugin's CDI spec for GPU 0 against `nvidia-ctk cdi generate`'s, both applied by the
   CDI library: every edit NVIDIA's makes must be in ours (`tests.support.cdi_reference`).

Nothing here changes a GPU's configuration: no MIG mode, no clocks, no reset. Each step bounds its own waits.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree


from tests.agents.gpu_machine import GpuEvidence, find_gpu_evidence
from tests.gpu.load import GpuLoad
from tests.gpu.smi import SmiError, SmiGpu, query_smi
from tests.support.cdi_reference import ReferenceTools, compare_on_real_gpu, find_reference_tools

__all__ = [
    "PASSED",
    "FAILED",
    "SKIPPED",
    "STEPS",
    "CheckContext",
    "StepResult",
    "cdi_spec_vs_nvidia_ctk",
    "device_plugin_allocates_a_gpu",
    "driver",
    "exporter_under_load_vs_smi",
    "feature_discovery_vs_smi",
    "pytest_gpu",
    "run_steps",
    "validator_host_driver",
]

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20


@dataclass
class CheckContext:
    """Where the check runs and what it reads; the defaults are a real machine, tests swap in a simulated one."""

    work_dir: Path
    #: The agents' `--nvml`: `auto` (the driver) or `fake:<profile>`.
    nvml: str = "auto"
    smi: Callable[[], tuple[SmiGpu, ...]] = query_smi
    evidence: Callable[[], GpuEvidence] = find_gpu_evidence
    #: A context manager keeping a GPU (by index) busy; None where there is nothing to load (simulated NVML).
    load: Callable[[int], AbstractContextManager[Any]] | None = GpuLoad
    load_seconds: float = 5.0
    #: The exporter's `--collect-interval` (ms).
    collect_interval_ms: int = 1000
    python: str = sys.executable
    pytest_args: tuple[str, ...] = ("tests", "-m", "gpu")
    dev_root: str = "/"
    host_root: str = "/"
    #: The kernel's views the validator reads (/proc/devices, nvidia-caps, /sys/module/nvidia).
    proc: str = "/proc"
    sys: str = "/sys"
    #: `nvidia-ctk` and `cdi-apply` (CDI_TOOLS=<dir>, the e2e tools' bin directory, else PATH); None skips step 7.
    cdi_tools: ReferenceTools | None = field(default_factory=lambda: find_reference_tools(*_cdi_tool_dirs()))
    environ: dict[str, str] = field(default_factory=lambda: {
        k: v for k, v in os.environ.items() if not k.startswith(("DCGM_", "GPU_OPERATOR_", "PYTEST_"))
    })


@dataclass(frozen=True)
class StepResult:
    """One step's outcome, a one-line summary, and what was compared."""

    name: str
    status: str
    summary: str
    details: tuple[str, ...] = ()
    seconds: float = 0.0


class StepFailed(Exception):
    """A step's comparison did not hold; the message is the summary, `details` what was seen."""

    def __init__(self, summary: str, details: Sequence[str] = ()) -> None:
        super().__init__(summary)
        self.details = tuple(details)


def _run(ctx: CheckContext, arguments: Sequence[str], timeout: float = 120,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(arguments), cwd=ROOT, env={**ctx.environ, **(env or {})}, capture_output=True,
                          text=True, timeout=timeout, check=False)


def _agent(ctx: CheckContext, *arguments: str) -> list[str]:
    return [ctx.python, "-m", "gpu_operator.agents.cli", *arguments]


# -- 1. driver -----------------------------------------------------------------------------------------------------


def driver(ctx: CheckContext) -> StepResult:
    if ctx.nvml == "auto":
        evidence = ctx.evidence()
        if not evidence.present:
            raise StepFailed(f"no NVIDIA driver: {evidence.describe()}")
        seen = f"driver evidence: {evidence.describe()}"
    else:
        seen = f"simulated NVML backend {ctx.nvml}"
    try:
        gpus = ctx.smi()
    except SmiError as error:
        raise StepFailed(f"no NVIDIA driver: nvidia-smi cannot list the GPUs ({error})", [seen]) from None
    if not gpus:
        raise StepFailed("no NVIDIA driver: nvidia-smi lists no GPU", [seen])
    lines = [seen, *(f"GPU {g.index}: {g.name} {g.uuid} {g.pci_bus_id}, driver {g.driver_version}" for g in gpus)]
    return StepResult("driver", PASSED, f"{len(gpus)} GPU(s), driver {gpus[0].driver_version}", tuple(lines))


# -- 2. pytest -m gpu -------------------------------------------------------------------------------------------------


def pytest_gpu(ctx: CheckContext) -> StepResult:
    report = ctx.work_dir / "pytest-gpu.xml"
    done = _run(ctx, [ctx.python, "-m", "pytest", *ctx.pytest_args, "-q", "-p", "no:cacheprovider",
                      f"--junitxml={report}"], timeout=1800, env={"GPU_REQUIRED": "1"})
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failed: list[str] = []
    if report.exists():
        for suite in ElementTree.parse(report).iter("testsuite"):
            for key in counts:
                counts[key] += int(suite.get(key, "0"))
        for case in ElementTree.parse(report).iter("testcase"):
            if any(child.tag in ("failure", "error") for child in case):
                failed.append(f"{case.get('classname')}::{case.get('name')}")
    summary = (f"{counts['tests']} gpu tests: {counts['failures']} failed, {counts['errors']} errors, "
               f"{counts['skipped']} skipped")
    if done.returncode != 0 or counts["tests"] == 0:
        tail = done.stdout.strip().splitlines()[-15:]
        raise StepFailed(f"GPU_REQUIRED=1 pytest -m gpu exited {done.returncode}: {summary}", [*failed, *tail])
    return StepResult("pytest-gpu", PASSED, summary)


# -- 3. feature discovery ------------------------------------------------------------------------------------------


def _sanitise(name: str) -> str:
    """GFD's product label: characters outside [A-Za-z0-9-_. ] dropped, whitespace runs joined by '-'."""
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", name).split())


def _expect(problems: list[str], what: str, ours: object, reference: object) -> str:
    line = f"{what}: agent {ours!r}, nvidia-smi {reference!r}"
    if ours != reference:
        problems.append(line)
    return line


def feature_discovery_vs_smi(ctx: CheckContext) -> StepResult:
    gpus = ctx.smi()
    done = _run(ctx, _agent(ctx, "feature-discovery", "--nvml", ctx.nvml, "--oneshot", "--output-file", "",
                            "--use-node-feature-api=false", "--no-timestamp"))
    if done.returncode != 0:
        raise StepFailed(f"feature-discovery exited {done.returncode}", done.stderr.strip().splitlines()[-10:])
    labels = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    last = gpus[-1]
    problems: list[str] = []
    lines = [
        _expect(problems, "nvidia.com/gpu.product", labels.get("nvidia.com/gpu.product"), _sanitise(last.name)),
        _expect(problems, "nvidia.com/gpu.count", labels.get("nvidia.com/gpu.count"),
                str(sum(g.name == last.name for g in gpus))),
        _expect(problems, "nvidia.com/gpu.memory", labels.get("nvidia.com/gpu.memory"),
                None if last.memory_total_mib is None else str(int(last.memory_total_mib))),
        _expect(problems, "nvidia.com/cuda.driver-version.full", labels.get("nvidia.com/cuda.driver-version.full"),
                last.driver_version),
    ]
    if problems:
        raise StepFailed(f"{len(problems)} label(s) differ from nvidia-smi", lines)
    return StepResult("feature-discovery-vs-nvidia-smi", PASSED, f"{len(labels)} labels, 4 compared", tuple(lines))


# -- 4. exporter under load ----------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _scrape(port: int) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        return connection.getresponse().read().decode()
    finally:
        connection.close()


_SAMPLE = re.compile(r"^(\w+)\{([^}]*)\} (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _samples(body: str, name: str) -> dict[str, tuple[dict[str, str], float]]:
    """The whole-GPU samples of metric `name`, by UUID."""
    found = {}
    for line in body.splitlines():
        matched = _SAMPLE.match(line)
        if matched and matched.group(1) == name:
            labels = dict(_LABEL.findall(matched.group(2)))
            if "GPU_I_ID" not in labels:
                found[labels.get("UUID", "")] = (labels, float(matched.group(3)))
    return found


@contextlib.contextmanager
def _exporter(ctx: CheckContext) -> Iterator[int]:
    port = _free_port()
    process = subprocess.Popen(_agent(ctx, "metrics-exporter", "--nvml", ctx.nvml, "--address", f"127.0.0.1:{port}",
                                      "--collect-interval", str(ctx.collect_interval_ms)),
                               cwd=ROOT, env=ctx.environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise StepFailed(f"the exporter exited with {process.returncode}",
                                 (process.stderr.read().decode() if process.stderr else "").splitlines()[-10:])
            with contextlib.suppress(OSError):
                if "DCGM_FI_DEV_GPU_TEMP" in _scrape(port):
                    break
            if time.monotonic() > deadline:
                raise StepFailed("the exporter served no GPU metrics within 60 s")
            time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


def _close(problems: list[str], what: str, ours: float | None, reference: float | None, tolerance: float) -> str:
    line = f"{what}: exporter {ours}, nvidia-smi {reference} (tolerance {tolerance:g})"
    if ours is None or reference is None or abs(ours - reference) > tolerance:
        problems.append(line)
    return line


def exporter_under_load_vs_smi(ctx: CheckContext) -> StepResult:
    lines: list[str] = []
    with _exporter(ctx) as port:
        load = ctx.load(0) if ctx.load is not None else contextlib.nullcontext()
        with load as running:
            time.sleep(ctx.load_seconds)
            body = _scrape(port)
            gpus = ctx.smi()
        launches = getattr(running, "launches", None)
        lines.append("load: none (simulated NVML)" if running is None else f"load: {launches} kernel launches on GPU 0")
    problems: list[str] = []
    temperature, used = _samples(body, "DCGM_FI_DEV_GPU_TEMP"), _samples(body, "DCGM_FI_DEV_FB_USED")
    power, busy = _samples(body, "DCGM_FI_DEV_POWER_USAGE"), _samples(body, "DCGM_FI_DEV_GPU_UTIL")
    for gpu in gpus:
        if gpu.uuid not in temperature:
            problems.append(f"GPU {gpu.index} {gpu.uuid}: no DCGM_FI_DEV_GPU_TEMP series")
            continue
        labels, value = temperature[gpu.uuid]
        lines.append(_expect(problems, f"GPU {gpu.index} modelName", labels.get("modelName"), gpu.name))
        lines.append(_expect(problems, f"GPU {gpu.index} pci_bus_id", labels.get("pci_bus_id", "").upper(),
                             gpu.pci_bus_id.upper()))
        lines.append(_close(problems, f"GPU {gpu.index} temperature (C)", value, gpu.temperature_c, 5))
        total = gpu.memory_total_mib or 0
        lines.append(_close(problems, f"GPU {gpu.index} frame buffer used (MiB)", used.get(gpu.uuid, ({}, None))[1],
                            gpu.memory_used_mib, max(64.0, 0.02 * total)))
        reference = gpu.power_w
        lines.append(_close(problems, f"GPU {gpu.index} power (W)", power.get(gpu.uuid, ({}, None))[1], reference,
                            max(25.0, 0.25 * (reference or 0))))
    if ctx.load is not None and gpus:
        utilization = busy.get(gpus[0].uuid, ({}, None))[1]
        lines.append(f"GPU 0 utilisation under load: exporter {utilization}, nvidia-smi {gpus[0].utilization_pct}")
        if not utilization:
            problems.append("GPU 0 utilisation under load: the exporter reports 0 while the load runs")
    if problems:
        raise StepFailed(f"{len(problems)} reading(s) differ from nvidia-smi", [*problems, "", *lines])
    return StepResult("exporter-under-load-vs-nvidia-smi", PASSED, f"{len(gpus)} GPU(s) compared", tuple(lines))


# -- 5. device plugin ----------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _plugin(ctx: CheckContext, directory: Path, **cli: str) -> Iterator[tuple[Any, str]]:
    """The device plugin set on this machine's NVML, registered with a fake kubelet in `directory`."""
    from gpu_operator.agents.device_plugin import PluginManager, resolve_settings
    from gpu_operator.agents.nvml import open_nvml
    from tests.agents.device_plugin.harness import FakeKubelet

    plugins = directory / "device-plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    arguments = {"kubelet_socket": str(plugins / "kubelet.sock"), "dev_root": ctx.dev_root,
                 "cdi_spec_dir": str(directory / "cdi"), "pass_device_specs": "true", **cli}
    settings = resolve_settings(arguments, {})
    kubelet = FakeKubelet(str(plugins))
    kubelet.start()
    nvml = open_nvml(ctx.nvml)
    manager = PluginManager(settings, nvml, {})
    try:
        manager.start()
        yield kubelet, str(plugins)
    finally:
        manager.stop()
        kubelet.stop()
        nvml.close()


def device_plugin_allocates_a_gpu(ctx: CheckContext) -> StepResult:
    from tests.agents.device_plugin.harness import PluginClient, short_tempdir

    gpus = ctx.smi()
    with short_tempdir() as directory, _plugin(ctx, Path(directory)) as (kubelet, plugins):
        registration = kubelet.next_registration()
        client = PluginClient(os.path.join(plugins, registration.endpoint))
        try:
            advertised = [d.ID for d in client.watch().devices]
            answer = client.allocate([gpus[0].uuid]).container_responses[0]
        finally:
            client.close()
    problems: list[str] = []
    lines = [f"registered {registration.resource_name} at {registration.endpoint}",
             _expect(problems, "advertised devices", sorted(advertised), sorted(g.uuid for g in gpus)),
             _expect(problems, "NVIDIA_VISIBLE_DEVICES", dict(answer.envs).get("NVIDIA_VISIBLE_DEVICES"),
                     gpus[0].uuid)]
    nodes = [d.host_path for d in answer.devices if re.fullmatch(r"/dev/nvidia\d+", d.container_path)]
    lines.append(f"GPU device nodes in the answer: {nodes}")
    if len(nodes) != 1 or not os.path.exists(nodes[0]):
        problems.append(f"the answer should pass exactly one existing /dev/nvidia<N> for GPU 0, not {nodes}")
    if problems:
        raise StepFailed(f"{len(problems)} problem(s) allocating GPU 0", [*problems, "", *lines])
    return StepResult("device-plugin-allocates-a-gpu", PASSED, f"allocated GPU 0 ({gpus[0].uuid})", tuple(lines))


# -- 6. validator --------------------------------------------------------------------------------------------------


def validator_host_driver(ctx: CheckContext) -> StepResult:
    """The validator's driver component in this process, as `tests/agents/validator/test_gpu_driver.py` runs it:
    the host root is `ctx.host_root` (the validator container sees it at /host), /dev/char links go to a
    directory of the work dir, and module loads are recorded, never run."""
    from gpu_operator.agents.validator.driver import driver as validate_driver
    from gpu_operator.agents.validator.errors import ValidationFailed
    from gpu_operator.agents.validator.paths import Paths
    from tests.agents.validator.helpers import Node, context

    root = ctx.work_dir / "validator"
    root.mkdir(parents=True, exist_ok=True)
    node = Node(root, Paths(host_root=ctx.host_root, host_dev_char=str(root / "dev-char"), proc=ctx.proc,
                            sys=ctx.sys))
    try:
        validate_driver(context(node, nvml=ctx.nvml))
    except ValidationFailed as failure:
        raise StepFailed(f"the validator did not validate the host's driver: {failure}") from None
    ready = node.status / "driver-ready"
    text = ready.read_text() if ready.exists() else ""
    lines = [*(f"driver-ready: {line}" for line in text.splitlines()),
             f"module loads asked for: {node.commands or 'none'}"]
    if not text.startswith("IS_HOST_DRIVER=true\n"):
        raise StepFailed("the validator did not find the host's driver", lines)
    return StepResult("validator-host-driver", PASSED, "driver-ready written for the host driver", tuple(lines))


# -- 7. CDI spec (only with nvidia-ctk and cdi-apply) ----------------------------------------------------------------------


def _cdi_tool_dirs() -> list[Path]:
    directories = [Path(os.environ["CDI_TOOLS"])] if os.environ.get("CDI_TOOLS") else []
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        built = subprocess.run([str(ROOT / "tools" / "e2e" / "build.sh"), "--bin-dir"], capture_output=True,
                               text=True, timeout=30, check=True).stdout.strip()
        directories.append(Path(built))
    return directories


def cdi_spec_vs_nvidia_ctk(ctx: CheckContext) -> StepResult:
    """The device plugin's CDI spec for GPU 0 against `nvidia-ctk cdi generate`'s, both applied by the CDI library
    (`cdi-apply`) to one OCI spec: every mount, hook, device node and env NVIDIA's injects must be in ours."""
    if ctx.cdi_tools is None:
        return StepResult("cdi-spec-vs-nvidia-ctk", SKIPPED,
                          "nvidia-ctk and cdi-apply not found (CDI_TOOLS=<dir>, `make e2e-tools`, or PATH)")
    try:
        uuid, missing = compare_on_real_gpu(ctx.cdi_tools, ctx.work_dir)
    except RuntimeError as error:
        raise StepFailed("the CDI comparison could not run", str(error).splitlines()[-10:]) from error
    if missing:
        raise StepFailed(f"our spec lacks {len(missing)} edit(s) NVIDIA's injects for GPU {uuid}", missing)
    return StepResult("cdi-spec-vs-nvidia-ctk", PASSED, f"GPU {uuid}: our spec injects every edit NVIDIA's does")


#: The steps in order: (name, function, whether it needs the `driver` step to have passed).
STEPS: tuple[tuple[str, Callable[[CheckContext], StepResult]], ...] = (
    ("driver", driver),
    ("pytest-gpu", pytest_gpu),
    ("feature-discovery-vs-nvidia-smi", feature_discovery_vs_smi),
    ("exporter-under-load-vs-nvidia-smi", exporter_under_load_vs_smi),
    ("device-plugin-allocates-a-gpu", device_plugin_allocates_a_gpu),
    ("validator-host-driver", validator_host_driver),
    ("cdi-spec-vs-nvidia-ctk", cdi_spec_vs_nvidia_ctk),
)


def run_steps(ctx: CheckContext, skip: Sequence[str] = ()) -> list[StepResult]:
    """Every step in order; after a failed `driver` step the others are skipped. A step that raises something
    other than StepFailed fails with the exception, and the next step still runs."""
    ctx.work_dir.mkdir(parents=True, exist_ok=True)
    results: list[StepResult] = []
    for name, step in STEPS:
        if name in skip:
            results.append(StepResult(name, SKIPPED, "skipped on request"))
            continue
        if results and results[0].status != PASSED:
            results.append(StepResult(name, SKIPPED, "no NVIDIA driver"))
            continue
        started = time.monotonic()
        try:
            result = step(ctx)
        except StepFailed as failure:
            result = StepResult(name, FAILED, str(failure), failure.details)
        except Exception as error:  # noqa: BLE001 - one step's crash is that step's failure, the check goes on
            result = StepResult(name, FAILED, f"{type(error).__name__}: {error}")
        results.append(StepResult(result.name, result.status, result.summary, result.details,
                                  round(time.monotonic() - started, 1)))
    return results


def results_json(results: Sequence[StepResult]) -> str:
    return json.dumps([r.__dict__ for r in results], indent=2)
