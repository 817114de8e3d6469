"""`make image` (tools/build-image.sh): the first builder that can build here, or a clear failure.

The builders are stand-ins on PATH that record how they were called, so the choice is tested on any machine:
a docker client whose `docker info` fails (no engine) is passed over, as on a machine with only the client.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpu_operator import __version__
from tests.support.reference import REPO_ROOT

SCRIPT = REPO_ROOT / "tools" / "build-image.sh"


def _tool(bin_dir: Path, name: str, log: Path, *, fails: tuple[str, ...] = ()) -> None:
    """A stand-in `name` that logs its argv and exits 1 for the given first arguments."""
    cases = "".join(f'    "{first}") exit 1 ;;\n' for first in fails)
    (bin_dir / name).write_text(
        f'#!/bin/sh\necho "{name} $*" >> "{log}"\ncase "$1" in\n{cases}esac\nexit 0\n'
    )
    (bin_dir / name).chmod(0o755)


def _run(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # only the stand-ins and the basic tools the script itself uses (sed, head, git, dirname)
    basics = bin_dir / "basics"
    basics.mkdir(exist_ok=True)
    for tool in ("sed", "head", "dirname", "cat", "bash", "git"):
        found = shutil.which(tool)
        if found and not (basics / tool).exists():
            (basics / tool).symlink_to(found)
    env = {**os.environ, "PATH": f"{bin_dir}:{basics}"}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, check=False)


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    path = tmp_path / "bin"
    path.mkdir()
    return path


def test_no_builder_fails_with_exit_1_and_says_what_to_do(bin_dir: Path) -> None:
    result = _run(bin_dir)
    assert result.returncode == 1
    assert "no docker, podman or buildah on PATH" in result.stderr and "agents.build" in result.stderr


def test_a_docker_client_without_an_engine_is_not_a_builder(bin_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    _tool(bin_dir, "docker", log, fails=("info",))
    result = _run(bin_dir)
    assert result.returncode == 1
    assert "no Docker engine answers (docker info failed)" in result.stderr
    assert log.read_text().splitlines() == ["docker info"]  # nothing was built


def test_docker_with_an_engine_builds_with_buildx_for_amd64(bin_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    _tool(bin_dir, "docker", log)
    _tool(bin_dir, "podman", log)
    result = _run(bin_dir, "registry.example.com/gpu/agents:dev")
    assert result.returncode == 0, result.stderr
    build = log.read_text().splitlines()[-1]
    assert build.startswith("docker buildx build --load --platform linux/amd64 ")
    assert f"--build-arg VERSION={__version__}" in build
    assert build.endswith("-t registry.example.com/gpu/agents:dev .")
    assert "push it to a registry" in result.stderr


def test_podman_then_buildah_when_docker_cannot(bin_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    _tool(bin_dir, "docker", log, fails=("info",))
    _tool(bin_dir, "buildah", log)
    result = _run(bin_dir)
    assert result.returncode == 0, result.stderr
    assert log.read_text().splitlines()[-1].startswith("buildah build --platform linux/amd64 ")
    assert log.read_text().splitlines()[-1].endswith(f"-t gpu-operator-agents:{__version__} .")
    _tool(bin_dir, "podman", log)
    assert _run(bin_dir).returncode == 0
    assert log.read_text().splitlines()[-1].startswith("podman build --platform linux/amd64 ")


def test_a_failing_build_fails_make_image(bin_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    _tool(bin_dir, "podman", log, fails=("build",))
    assert _run(bin_dir).returncode == 1


def test_the_makefile_runs_the_script() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "\nimage:\n\t./tools/build-image.sh $(IMAGE)\n" in makefile
