"""policy-pack/PulumiPolicy.yaml: the engine starts the pack in the pack's own virtualenv.

Without `runtime.options.virtualenv` the Python language host runs the pack with the system python, and the pack
fails to start (`No module named 'pulumi'`); the virtualenv is the one `make policy-venv` builds.
"""

from __future__ import annotations

import re

import yaml

from tests.support.reference import REPO_ROOT

PACK = REPO_ROOT / "policy-pack"


def test_the_pack_names_the_virtualenv_make_builds_for_it() -> None:
    project = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python"
    virtualenv = project["runtime"]["options"]["virtualenv"]
    [make_venv] = re.findall(r"^POLICY_VENV := (\S+)$", (REPO_ROOT / "Makefile").read_text(), re.M)
    assert (PACK / virtualenv).resolve() == (REPO_ROOT / make_venv).resolve()
