"""GpuOperator from other languages under the real engine: a Pulumi YAML and a TypeScript program each deploy it.

The programs are the examples in `examples/multi-language/`, copied to a temporary project each. Each project does
what a user does: `pulumi package add <plugin folder>` (for TypeScript after `npm install` with `@pulumi/pulumi`
pinned to the built CLI's version; the CLI generates and links the `@pulumi/gpu-operator` SDK), the control plane's
admin kubeconfig as a secret stack setting, `pulumi up`, then a plain `pulumi destroy`. After `up` every object the
render holds is in the API server, the operand DaemonSets schedule onto a KWOK GPU node carrying the deploy labels,
and the stack outputs are the component's; after `destroy` no object is left. A YAML program with a bad config
document fails with the config's problems as input-property errors, and no traceback.

The plugin folder is written by `plugin_folder` for a virtualenv of the test's own that sees the e2e tier's
packages (`.venv-e2e`, its SDKs pinned to the built engine) through a `.pth` file. `pulumi package add` installs a
Python plugin's dependencies into the plugin's virtualenv (`python -m venv` over it, then `pip install --upgrade pip
setuptools wheel`), which must not happen to `.venv-e2e` itself. The installed SDKs make the Python host name the
plugins of `pulumi-azure-native` and `pulumi-docker-build` as the plugin's dependencies; no binary of either can be
had here, and the component never uses them, so stand-ins (a script that fails if ever run) are installed under
their names and versions. The TypeScript dependencies are installed once per `package.json` into the e2e tools'
cache and copied into each project. Every process the engine starts (its PULUMI_HOME is the module's own) is
stopped after each test, and the control plane at the end of the module.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpu_operator.components.multi_language.plugin_folder import write_plugin_folder
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import Namespace
from pulumi import automation as auto

from gpu_operator.config import GpuStackConfig, parse_config
from gpu_operator.render import render_operands
from gpu_operator.render.workload_facts import deploy_node_labels, gpu_resource_names, runtime_class_name
from tests.e2e.apply import KindTable
from tests.e2e.control_plane import ControlPlane
from tests.e2e.engine import E2E_VENV, Engine, EngineError, EngineStack
from tests.e2e.engine_fleet import engine_plane, register_nodes, require_engine
from tests.e2e.nodes import SimulatedNode, node_object
from tests.e2e.report import note
from tests.e2e.tools import E2eTools
from tests.e2e.waiting import wait_until
from tests.support.reference import REPO_ROOT

pytestmark = pytest.mark.e2e

EXAMPLES = REPO_ROOT / "examples" / "multi-language"
STACK = "e2e"
NODE = "gpu-multi-language-0"
#: The Node.js SDK the TypeScript program runs with: the built CLI's version.
NODE_SDK_VERSION = "3.259.0"
#: SDKs in the e2e venv whose plugins the Python host names as the component provider's dependencies.
STAND_IN_SDKS = ("pulumi_azure_native", "pulumi_docker_build")
_STAND_IN = "#!/bin/sh\necho 'stand-in plugin of the e2e tier: it has no binary and must never run' >&2\nexit 1\n"
_NPM_SECONDS = 600
_WAIT_SECONDS = 60
_STOP_SECONDS = 10.0


def _example_config() -> dict[str, Any]:
    """The config document both example programs pass (they carry the same one)."""
    program = yaml.safe_load((EXAMPLES / "yaml" / "Pulumi.yaml").read_text())
    return program["resources"]["gpu"]["properties"]["config"]


@pytest.fixture(scope="module")
def config() -> GpuStackConfig:
    return parse_config(_example_config())


@pytest.fixture(scope="module")
def plane(e2e_tools: E2eTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with engine_plane(e2e_tools, tmp_path_factory.mktemp("multi-language-plane")) as started:
        yield started


@pytest.fixture(scope="module")
def cluster(plane: ControlPlane, config: GpuStackConfig) -> Client:
    """The plane's admin client, with one KWOK GPU node carrying the labels the operands select on."""
    client = plane.client()
    objects = [obj for operand in render_operands(config) for obj in operand.objects]
    labels = {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux", "type": "kwok",
              **deploy_node_labels(objects)}
    register_nodes(client, [node_object(SimulatedNode(NODE, None, labels, [], 8))], timeout=_WAIT_SECONDS)
    return client


def _installed_plugin(sdk: str) -> tuple[str, str]:
    """(name, version) of the resource plugin a Pulumi SDK of the e2e venv names in its pulumi-plugin.json."""
    path = _site_packages(E2E_VENV / "bin" / "python") / sdk / "pulumi-plugin.json"
    plugin = json.loads(path.read_text())
    return plugin["name"], plugin["version"].removeprefix("v")


@pytest.fixture(scope="module")
def engine(e2e_tools: E2eTools, tmp_path_factory: pytest.TempPathFactory) -> Engine:
    require_engine(e2e_tools)
    engine = Engine(e2e_tools, tmp_path_factory.mktemp("multi-language-engine"))
    stand_in = engine.workdir / "stand-in-plugin"
    stand_in.write_text(_STAND_IN)
    stand_in.chmod(0o755)
    for sdk in STAND_IN_SDKS:
        name, version = _installed_plugin(sdk)
        engine.cli("plugin", "install", "resource", name, version, "--file", str(stand_in))
    return engine


def _processes_of(home: Path) -> list[int]:
    """Running processes (other than this one) whose PULUMI_HOME is `home`: the engine's, started by this module."""
    marker = f"PULUMI_HOME={home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environment:
            found.append(int(entry.name))
    return found


def _stop(pids: list[int]) -> None:
    """SIGTERM, then SIGKILL what is still running after a bounded wait."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + _STOP_SECONDS
        while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
            time.sleep(0.2)


@pytest.fixture(autouse=True)
def no_engine_process_left(engine: Engine, request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test, no process of the module's engine may still run. The CLI (3.259.0) leaves the Python
    language host (a gRPC server on 127.0.0.1) running after `pulumi up` of the YAML program (not of the TypeScript
    one); whatever is left is stopped here, bounded in time, and reported."""
    yield
    if not Path("/proc").is_dir():
        return
    time.sleep(1.0)  # the CLI's own shutdown of its plugins
    left = _processes_of(engine.home)
    if left:
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
                    for pid in left if Path(f"/proc/{pid}/cmdline").exists()]
        note(f"multi-language: {len(left)} engine process(es) still running after {request.node.name}, stopped: "
             + ", ".join(Path(command).name for command in commands))
        _stop(left)


def _site_packages(python: Path) -> Path:
    result = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                            capture_output=True, text=True, check=True, timeout=60)
    return Path(result.stdout.strip())


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gpu-operator plugin folder, for a virtualenv that sees the e2e venv's packages (and its editable
    install of this project) through `site.addsitedir`."""
    root = tmp_path_factory.mktemp("multi-language-plugin")
    environment = root / "venv"
    venv.EnvBuilder(with_pip=False).create(environment)
    layered = f"import site; site.addsitedir({str(_site_packages(E2E_VENV / 'bin' / 'python'))!r})\n"
    (_site_packages(environment / "bin" / "python") / "00-e2e-venv.pth").write_text(layered)
    return write_plugin_folder(root / "gpu-operator-plugin", environment)


def _node_modules(package_json: Path, cache: Path) -> Path:
    """node_modules for this package.json, installed once (from npm) into `cache`."""
    key = hashlib.sha256(package_json.read_bytes()).hexdigest()[:16]
    installed = cache / key / "node_modules"
    if installed.is_dir():
        return installed
    staging = cache / f".staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    shutil.copy2(package_json, staging / "package.json")
    npm = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=staging, check=False,
                         capture_output=True, text=True, timeout=_NPM_SECONDS,
                         env={**os.environ, "npm_config_update_notifier": "false"})
    assert npm.returncode == 0, f"npm install failed:\n{npm.stdout[-3000:]}\n{npm.stderr[-3000:]}"
    installed.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staging / "node_modules", installed)
    shutil.rmtree(staging, ignore_errors=True)
    return installed


def _project(engine: Engine, name: str, example: Path) -> Path:
    folder = engine.projects / name
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(example, folder, ignore=shutil.ignore_patterns("node_modules", "sdks", "Pulumi.*.yaml"))
    return folder


def _package_add(engine: Engine, project: Path, plugin: Path) -> float:
    started = time.monotonic()
    engine.cli("package", "add", str(plugin), cwd=project)
    return time.monotonic() - started


def _stack(engine: Engine, project: Path, kubeconfig: str) -> EngineStack:
    stack = engine.stack(project, STACK)
    stack.stack.set_config("kubeconfig", auto.ConfigValue(value=kubeconfig, secret=True))
    return stack


def _rendered(config: GpuStackConfig) -> list[dict[str, Any]]:
    return [obj for operand in render_operands(config) for obj in operand.objects]


def _describe(obj: dict[str, Any]) -> str:
    return f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


def _missing(client: Client, objects: list[dict[str, Any]]) -> list[str]:
    """The objects the API server does not hold, as `Kind namespace/name`."""
    table, missing = KindTable(), []
    for obj in objects:
        meta = obj["metadata"]
        try:
            client.get(table.resource(obj), name=meta["name"], namespace=meta.get("namespace"))
        except ApiError as error:
            if error.status.code != 404:
                raise
            missing.append(_describe(obj))
    return missing


def _deploy_and_destroy(language: str, stack: EngineStack, cluster: Client, config: GpuStackConfig,
                        package_add_seconds: float) -> None:
    objects = _rendered(config)
    daemonsets = [obj["metadata"]["name"] for obj in objects if obj["kind"] == "DaemonSet"]
    up = stack.up()
    assert not up.errors, up.errors
    created = up.ops().get("create", 0)
    assert any(step.type == "gpu-operator:index:GpuOperator" and step.op == "create" for step in up.steps)
    missing = _missing(cluster, objects)
    assert not missing, f"objects the {language} program created are not in the API server: {missing}"
    live = {ds.metadata.name for ds in cluster.list(DaemonSet, namespace=config.namespace)}
    assert live == set(daemonsets)

    def scheduled() -> int:
        return sum((ds.status.desiredNumberScheduled or 0) if ds.status else 0
                   for ds in cluster.list(DaemonSet, namespace=config.namespace))

    wait_until(lambda: scheduled() > 0, timeout=_WAIT_SECONDS, what="an operand DaemonSet to schedule on the GPU node")
    pods = scheduled()
    outputs = stack.outputs()
    assert outputs["namespace"] == config.namespace
    assert outputs["daemonsetNames"] == daemonsets
    assert outputs["gpuResourceNames"] == gpu_resource_names(config)
    assert outputs["nodeSelectorLabels"] == deploy_node_labels(objects)
    assert outputs["runtimeClassName"] == runtime_class_name(config)
    destroy = stack.destroy()
    assert not destroy.errors, destroy.errors
    gone = _missing(cluster, objects)
    assert len(gone) == len(objects), f"objects left after destroy: {sorted(set(map(_describe, objects)) - set(gone))}"
    terminating = [ns.metadata.name for ns in cluster.list(Namespace) if ns.status and ns.status.phase == "Terminating"]
    assert not terminating, f"namespaces still Terminating: {terminating}"
    note(f"multi-language {language}: package add {package_add_seconds:.1f} s, up {up.seconds:.1f} s "
         f"({created} created, {pods} operand pods scheduled on the GPU node), destroy {destroy.seconds:.1f} s "
         f"({len(destroy.steps)} deleted)")


def test_a_yaml_program_deploys_the_operator_and_destroys_it(
    engine: Engine, plane: ControlPlane, cluster: Client, plugin: Path, config: GpuStackConfig
) -> None:
    project = _project(engine, "gpu-operator-yaml", EXAMPLES / "yaml")
    seconds = _package_add(engine, project, plugin)
    assert yaml.safe_load((project / "Pulumi.yaml").read_text())["packages"] == {"gpu-operator": str(plugin)}
    _deploy_and_destroy("YAML", _stack(engine, project, plane.admin_kubeconfig.read_text()), cluster, config, seconds)


def test_a_typescript_program_deploys_the_operator_and_destroys_it(
    engine: Engine, plane: ControlPlane, cluster: Client, plugin: Path, config: GpuStackConfig, e2e_tools: E2eTools
) -> None:
    project = _project(engine, "gpu-operator-typescript", EXAMPLES / "typescript")
    package = json.loads((project / "package.json").read_text())
    package["dependencies"]["@pulumi/pulumi"] = NODE_SDK_VERSION
    (project / "package.json").write_text(json.dumps(package, indent=4) + "\n")
    cache = e2e_tools.bin_dir.parent / "multi-language-node"
    started = time.monotonic()
    shutil.copytree(_node_modules(project / "package.json", cache), project / "node_modules", symlinks=True)
    npm_seconds = time.monotonic() - started
    seconds = _package_add(engine, project, plugin)
    linked = json.loads((project / "package.json").read_text())["dependencies"]
    assert linked["@pulumi/gpu-operator"].startswith("file:"), linked
    note(f"multi-language TypeScript: node_modules ready in {npm_seconds:.1f} s (cached under {cache.name}/)")
    _deploy_and_destroy("TypeScript", _stack(engine, project, plane.admin_kubeconfig.read_text()), cluster, config,
                        seconds)


def test_a_bad_config_fails_with_its_problems_and_no_traceback(
    engine: Engine, plane: ControlPlane, cluster: Client, plugin: Path
) -> None:
    project = _project(engine, "gpu-operator-bad-config", EXAMPLES / "yaml")
    program = yaml.safe_load((project / "Pulumi.yaml").read_text())
    program["name"] = "gpu-operator-bad-config"
    program["resources"]["gpu"]["properties"]["config"] = {"operator": {"driver": {"enabled": "maybe"}}, "bogus": 1}
    (project / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))
    _package_add(engine, project, plugin)
    stack = _stack(engine, project, plane.admin_kubeconfig.read_text())
    with pytest.raises(EngineError) as failure:
        stack.up()
    errors = "\n".join(failure.value.operation.errors)
    assert "property config.operator.driver.enabled" in errors and "property config.bogus" in errors, errors
    assert "Traceback" not in errors and 'File "' not in errors, errors
    assert not [step for step in failure.value.operation.steps if step.type.startswith("kubernetes:")
                and step.op == "create"]
    note("multi-language: a bad config document fails `pulumi up` with:\n    "
         + "\n    ".join(line for line in errors.splitlines() if line.strip()))
