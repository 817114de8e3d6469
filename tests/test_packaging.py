"""Packaging: the wheel, its data files, both console scripts from a fresh virtualenv, and the agents' dependencies.

The wheel is built offline from a copy of the sources (`pip wheel --no-deps --no-build-isolation`, so the
setuptools already installed does the build and nothing is downloaded). It is installed with `--no-deps` into a
fresh virtualenv created without pip; that venv sees the running interpreter's site-packages through a `.pth` file
listing them (a venv made from a venv would only see the base interpreter's packages with
`--system-site-packages`). A plain path entry does not run the editable-install hook kept in those directories,
so `gpu_operator` is imported from the installed wheel, which the tests check.

`requirements-agents.txt` is what the agents image installs next to the wheel. It must name exactly the
distributions that `gpu_operator/agents/**` imports, agree with pyproject.toml, and satisfy the generated gRPC
and protobuf code.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import site
import subprocess
import sys
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.support.reference import REPO_ROOT

PACKAGE = REPO_ROOT / "gpu_operator"
AGENTS = PACKAGE / "agents"
AGENTS_REQUIREMENTS = REPO_ROOT / "requirements-agents.txt"
SOURCES = ("pyproject.toml", "setup.py", "README.md", "gpu_operator", "components", "pulumi_gpu_operator")
DATA_SUFFIXES = (".yaml", ".sh", ".csv")
PROFILES = ("a100-4x-mixed-mig", "a100-8x-mig", "h100-8x", "h200-8x", "t4-1x")
#: Copied into the image as /etc/dcgm-exporter/dcp-metrics-included.csv (see the Dockerfile).
EXPORTER_FIELDS = "gpu_operator/agents/metrics_exporter/default-counters.csv"
TIMEOUT = 120

_PULUMI_BLOCKED_IMPORT = """
import importlib, importlib.abc, pkgutil, sys
class NoPulumi(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pulumi", "pulumi_kubernetes", "pulumi_azure_native"):
            raise ImportError(f"agents must not import {name}")
sys.meta_path.insert(0, NoPulumi())
import gpu_operator, gpu_operator.agents, gpu_operator.agents.cli
for module in pkgutil.walk_packages(gpu_operator.agents.__path__, "gpu_operator.agents."):
    importlib.import_module(module.name)
for module in gpu_operator.agents.cli.AGENTS.values():
    importlib.import_module(module)
print(gpu_operator.__file__)
"""


def _run(command: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, timeout=TIMEOUT, check=False,
        env=environment, **kwargs,
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        path = REPO_ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, source / name)
    out = tmp_path_factory.mktemp("dist")
    built = _run([
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
        "--wheel-dir", out, source,
    ])
    assert built.returncode == 0, built.stdout + built.stderr
    (path,) = out.glob("pulumi_gpu_operator-*.whl")
    return path


@pytest.fixture(scope="module")
def fresh_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    own_site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (own_site / "_test_interpreter_packages.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    installed = _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel])
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return root


# --- the wheel --------------------------------------------------------------------------------------------------


def _package_data() -> set[str]:
    return {
        path.relative_to(REPO_ROOT).as_posix() for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix in DATA_SUFFIXES and "__pycache__" not in path.parts
    }


def test_wheel_carries_the_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        *(f"gpu_operator/agents/nvml/profiles/{profile}.yaml" for profile in PROFILES),
        "gpu_operator/render/scripts/device-plugin-entrypoint.sh",
        "gpu_operator/render/scripts/mig-manager-entrypoint.sh",
        "gpu_operator/config/builtin/default.yaml",
        EXPORTER_FIELDS,
        "gpu_operator/py.typed",
    }
    assert expected <= names, sorted(expected - names)
    assert _package_data() <= names, sorted(_package_data() - names)
    assert "gpu_operator/components/__init__.py" in names
    assert {"gpu_operator/components/multi_language/PulumiPlugin.yaml",  # the gpu-operator component provider
            "gpu_operator/components/multi_language/__main__.py",
            "pulumi_gpu_operator/pulumi-plugin.json"} <= names
    assert not [name for name in names if name.startswith(("tests/", "stacks/", "examples/"))]


def test_wheel_declares_both_console_scripts(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (entry_points,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        text = archive.read(entry_points).decode()
    assert "gpu-operator = gpu_operator.cli:main" in text
    assert "gpu-operator-agent = gpu_operator.agents.cli:main" in text


def test_the_dockerfile_copies_the_packaged_field_list() -> None:
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    assert f"/src/{EXPORTER_FIELDS} /etc/dcgm-exporter/dcp-metrics-included.csv" in dockerfile


# --- a fresh virtualenv -----------------------------------------------------------------------------------------


def test_agent_help_from_a_fresh_venv(fresh_venv: Path, tmp_path: Path) -> None:
    result = _run([fresh_venv / "bin" / "gpu-operator-agent", "--help"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("usage: gpu-operator-agent <agent> [flags]")
    assert "feature-discovery" in result.stderr


def test_operator_help_from_a_fresh_venv(fresh_venv: Path, tmp_path: Path) -> None:
    result = _run([fresh_venv / "bin" / "gpu-operator", "--help"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: gpu-operator ")
    assert "render" in result.stdout


def test_installed_agents_import_without_pulumi(fresh_venv: Path, tmp_path: Path) -> None:
    result = _run([fresh_venv / "bin" / "python", "-c", _PULUMI_BLOCKED_IMPORT], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).is_relative_to(fresh_venv), "imported the source tree, not the wheel"


#: What Pulumi's Python language host runs to find a distribution's `pulumi-plugin.json` (in the module named after
#: the distribution), and what it makes of it: without the file, `pulumi-gpu-operator` would be taken for the SDK of
#: a resource plugin `gpu-operator` that does not exist.
_PLUGIN_JSON_LOOKUP = """
import importlib.metadata, importlib.util, json, os
module = importlib.metadata.distribution("pulumi-gpu-operator").metadata["Name"].replace("-", "_")
spec = importlib.util.find_spec(module)
found = [os.path.join(str(l), "pulumi-plugin.json") for l in (spec.submodule_search_locations or [])]
print(json.dumps([json.load(open(p)) for p in found if os.path.isfile(p)]))
"""


def test_the_python_host_finds_that_the_distribution_brings_no_resource_plugin(fresh_venv: Path,
                                                                                tmp_path: Path) -> None:
    result = _run([fresh_venv / "bin" / "python", "-c", _PLUGIN_JSON_LOOKUP], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"resource": False}]


def test_the_installed_plugin_folder_runs_with_the_virtualenv_it_is_installed_in(fresh_venv: Path,
                                                                                   tmp_path: Path) -> None:
    """`pulumi package add <site-packages>/gpu_operator/components/multi_language` runs the provider with the
    Python of the virtualenv the wheel is installed in."""
    where = _run([fresh_venv / "bin" / "python", "-c",
                  "import gpu_operator.components.multi_language as m, os; print(os.path.dirname(m.__file__))"],
                 cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    folder = Path(where.stdout.strip())
    assert folder.is_relative_to(fresh_venv) and (folder / "__main__.py").is_file()
    settings = yaml.safe_load((folder / "PulumiPlugin.yaml").read_text())
    assert settings["runtime"]["name"] == "python"
    assert (folder / settings["runtime"]["options"]["virtualenv"]).resolve() == fresh_venv.resolve()


# --- the agents' dependencies -----------------------------------------------------------------------------------


def _requirements(text: str) -> dict[str, Requirement]:
    lines = (line.split("#")[0].strip() for line in text.splitlines())
    requirements = [Requirement(line) for line in lines if line]
    return {canonicalize_name(r.name): r for r in requirements}


def _agent_requirements() -> dict[str, Requirement]:
    return _requirements(AGENTS_REQUIREMENTS.read_text())


def _imports() -> Iterator[tuple[Path, str]]:
    """(file, absolute module name) of every import statement under gpu_operator/agents."""
    for path in sorted(AGENTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                yield from ((path, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield path, node.module


@cache
def _providers() -> dict[str, str]:
    """Top-level module (and namespace/subpackage pairs such as `google/protobuf`) → installed distribution."""
    providers: dict[str, str] = {}
    for distribution in importlib.metadata.distributions():
        name = canonicalize_name(distribution.metadata["Name"])
        for file in distribution.files or ():
            parts = file.parts
            providers.setdefault(parts[0].removesuffix(".py"), name)
            if len(parts) == 2 and parts[1] == "__init__.py":  # a package several distributions fill: its owner
                providers[parts[0]] = name
            if len(parts) > 2:
                providers.setdefault("/".join(parts[:2]), name)
            if len(parts) > 3:  # a namespace inside a namespace (azure/mgmt/compute, azure/mgmt/core)
                providers.setdefault("/".join(parts[:3]), name)
    return providers


def _distribution_of(module: str) -> str:
    """The installed distribution providing `module` (namespace packages such as `google` by their subpackage)."""
    parts = module.split(".")
    spec = importlib.util.find_spec(parts[0])
    namespace = spec is not None and spec.origin is None and len(parts) > 1
    # a subpackage another distribution provides (lightkube.models comes from lightkube-models) counts as its,
    # the deepest one known first (azure.mgmt.compute is azure-mgmt-compute's, not azure-mgmt-core's)
    nested = [key for key in ("/".join(parts[:3]), "/".join(parts[:2])) if len(parts) > 1 and key in _providers()]
    key = nested[0] if nested else "/".join(parts[:2]) if namespace else parts[0]
    assert key in _providers(), f"no installed distribution provides {module}"
    return _providers()[key]


def _third_party(module: str) -> bool:
    return module.split(".")[0] not in sys.stdlib_module_names and module.split(".")[0] != "gpu_operator"


#: Pure packages shared by the renderer and the agents: the MIG catalog and default config, the node labelling
#: and driver upgrade rules (the AKS pools' labels and the controller's come from one function), the ground
#: floor's facts (label selectors, quantities) and the fault catalog (the device plugin, the alerts and
#: remediation read one).
SHARED_WITH_AGENTS = ("gpu_operator.mig", "gpu_operator.labels", "gpu_operator.upgrade", "gpu_operator.facts",
                      "gpu_operator.faults", "gpu_operator.remediation")
#: The shared packages each shared package may import besides itself (the remediation reads the fault catalog).
SHARED_DEPENDENCIES = {"gpu_operator.remediation": ("gpu_operator.faults",)}


def test_agents_import_only_the_agents_package_of_this_project() -> None:
    outside = sorted(
        f"{path.relative_to(REPO_ROOT)}: {module}" for path, module in _imports()
        if module.startswith("gpu_operator.") and not module.startswith(("gpu_operator.agents", *SHARED_WITH_AGENTS))
    )
    assert not outside, "agents must not import the deployment side:\n" + "\n".join(outside)


def test_shared_packages_import_only_themselves() -> None:
    for package in SHARED_WITH_AGENTS:
        root = REPO_ROOT / package.replace(".", "/")
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                    [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
                )
                allowed = (package, *SHARED_DEPENDENCIES.get(package, ()))
                for module in modules:
                    assert not module.startswith("gpu_operator.") or module.startswith(allowed), (path, module)


def test_agents_requirements_name_exactly_what_the_agents_import() -> None:
    imported = {_distribution_of(module) for module in {m for _, m in _imports() if _third_party(m)}}
    assert set(_agent_requirements()) == imported


def test_agents_requirements_agree_with_pyproject() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    declared = _requirements("\n".join(project["dependencies"]))
    for name, requirement in _agent_requirements().items():
        assert name in declared, f"{name} is not a dependency in pyproject.toml"
        assert declared[name].specifier == requirement.specifier, (
            f"{name}: pyproject.toml says {declared[name].specifier}, requirements-agents.txt {requirement.specifier}"
        )
    assert not {"pulumi", "pulumi-kubernetes", "pulumi-azure-native"} & set(_agent_requirements())


def _generated_floors() -> dict[str, Version]:
    """Runtime versions the generated gRPC/protobuf modules under gpu_operator/agents insist on."""
    floors: dict[str, Version] = {}
    patterns = {
        "protobuf": re.compile(r"^# Protobuf Python Version: (\S+)$", re.MULTILINE),
        "grpcio": re.compile(r"^GRPC_GENERATED_VERSION = '([^']+)'$", re.MULTILINE),
    }
    for path in AGENTS.rglob("*_pb2*.py"):
        text = path.read_text(encoding="utf-8")
        for name, pattern in patterns.items():
            for found in pattern.findall(text):
                floors[name] = max(floors.get(name, Version(found)), Version(found))
    return floors


def test_agents_requirements_satisfy_the_generated_code() -> None:
    requirements = _agent_requirements()
    for name, floor in _generated_floors().items():
        lower = [Version(s.version) for s in requirements[name].specifier if s.operator in (">=", "==", "~=")]
        assert lower and max(lower) >= floor, f"generated code needs {name}>={floor}, the list allows older"


def _dependencies(name: str, extras: frozenset[str]) -> set[tuple[str, frozenset[str]]]:
    """The distributions `name[extras]` requires here, with the extras asked of each."""
    found = set()
    for line in importlib.metadata.requires(name) or ():
        requirement = Requirement(line)
        environments = [{"extra": extra} for extra in extras] or [{"extra": ""}]
        if requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments):
            found.add((canonicalize_name(requirement.name), frozenset(requirement.extras)))
    return found


def test_the_agents_requirements_bring_lightkubes_own_dependencies() -> None:
    """The image resolves requirements-agents.txt (test_dockerfile): lightkube, the agents' Kubernetes client,
    arrives with msgspec, the models, and httpx2 with the HTTP/2 and websocket extras it asks for."""
    seen: set[tuple[str, frozenset[str]]] = set()
    pending = [(name, frozenset(requirement.extras)) for name, requirement in _agent_requirements().items()]
    while pending:
        item = pending.pop()
        if item not in seen:
            seen.add(item)
            pending.extend(_dependencies(*item))
    names = {name for name, _ in seen}
    assert {"lightkube", "lightkube-models", "httpx2", "httpcore2", "msgspec", "pyyaml", "h2", "wsproto"} <= names
    for name in names:
        assert importlib.metadata.version(name), f"{name} is not installed"



# --- the command line's dependencies: what `make run` installs ----------------------------------------------------

CLI_REQUIREMENTS = REPO_ROOT / "requirements-cli.txt"

#: Every command of `gpu-operator`, as a newcomer runs them after `make run` (exit 3/4: a finding, not a failure).
_CLI_COMMANDS = """
import contextlib, io, sys
from gpu_operator.cli import main
out, values = sys.argv[1], sys.argv[2]
for args, allowed in [
    (["render", "-o", out, "--summary"], {0}), (["render", "-f", "examples/configs/dra.yaml"], {0}),
    (["render", "-f", "examples/configs/agents-image.yaml"], {0}), (["check", "--production"], {0}),
    (["dashboard"], {0}), (["import-values", values], {0}),
    (["dra", "match", "examples/workloads/dra/claim-templates.yaml", "--nvml", "fake:h100-8x"], {3}),
    (["diag", "--from", "tests/diag/recorded/driver-crash-loop.json"], {4}),
]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        status = main(args)
    assert status in allowed, (args, status, err.getvalue())
print("ok")
"""


def _blocked_modules() -> set[str]:
    """Top-level modules of the distributions pyproject.toml declares (dependencies and every extra) that
    requirements-cli.txt leaves out: what a `make run` virtualenv does not have."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    left_out = set(_requirements("\n".join(declared))) - set(_requirements(CLI_REQUIREMENTS.read_text()))
    return {module.split("/")[0] for module, name in _providers().items() if name in left_out and "." not in module
            and module.split("/")[0] not in ("bin", "..")} - {"google"} | {"google.protobuf"}


def test_cli_requirements_agree_with_pyproject() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    declared = _requirements("\n".join(project["dependencies"]))
    cli = _requirements(CLI_REQUIREMENTS.read_text())
    for name, requirement in cli.items():
        assert name in declared, f"{name} is not a dependency in pyproject.toml"
        assert declared[name].specifier == requirement.specifier, (
            f"{name}: pyproject.toml says {declared[name].specifier}, requirements-cli.txt {requirement.specifier}")
    assert not {name for name in cli if name.startswith("pulumi")}


def test_every_command_runs_with_only_the_cli_requirements(tmp_path: Path) -> None:
    """Pulumi's SDKs, gRPC, protobuf and the test extra blocked, as in the virtualenv `make run` builds."""
    blocked = sorted(_blocked_modules())
    assert {"pulumi", "pulumi_azure_native", "grpc", "kubernetes_validate"} <= set(blocked)
    guard = ("import importlib.abc, sys\n"
             f"BLOCKED = {blocked!r}\n"
             "class Blocked(importlib.abc.MetaPathFinder):\n"
             "    def find_spec(self, name, path=None, target=None):\n"
             "        if any(name == b or name.startswith(b + '.') for b in BLOCKED):\n"
             "            raise ImportError(f'{name} is not in requirements-cli.txt')\n"
             "sys.meta_path.insert(0, Blocked())\n")
    values = tmp_path / "values.yaml"
    values.write_text("driver:\n  version: 580.95.05\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-c", guard + _CLI_COMMANDS, str(tmp_path / "rendered"), str(values)],
                            capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO_ROOT)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


def test_make_run_installs_only_the_cli_requirements_quietly(tmp_path: Path) -> None:
    """`make run` on a fresh clone: the package without dependencies plus requirements-cli.txt (no test extra, no
    Pulumi SDKs), with a line of progress per step and setuptools' editable-install banner filtered out."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    result = subprocess.run([make, "-n", "run", f"VENV={tmp_path / 'venv'}"], capture_output=True, text=True,
                            timeout=TIMEOUT, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr
    installs = [line for line in result.stdout.splitlines() if " -m pip install " in line]
    assert [line.split(" install ", 1)[1].split()[-2:] for line in installs] == [
        ["-r", "requirements-cli.txt"], ["-e", "."]]
    assert all("--no-deps" in line for line in installs[1:]) and not any("[test]" in line for line in installs)
    assert all('PYTHONWARNINGS="ignore:Editable install"' in line for line in installs)
    assert sum(line.startswith("echo \"make: [") for line in result.stdout.splitlines()) >= 2
