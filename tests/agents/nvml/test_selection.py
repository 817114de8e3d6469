"""`--nvml auto|fake:<profile>` and GPU_OPERATOR_NVML: which NVML an agent runs on."""

from __future__ import annotations

import argparse

import pytest

from gpu_operator.agents.nvml import add_nvml_option, nvml_choice, open_nvml
from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.selection import NvmlChoice, parse_nvml_choice
from gpu_operator.agents.nvml.simulated import ProfileError


@pytest.mark.parametrize(
    ("spec", "choice"),
    [
        ("auto", NvmlChoice()),
        ("fake:h100-8x", NvmlChoice("h100-8x")),
        ("fake:./profiles/node.yaml", NvmlChoice("./profiles/node.yaml")),
    ],
)
def test_specs(spec: str, choice: NvmlChoice) -> None:
    assert parse_nvml_choice(spec) == choice


@pytest.mark.parametrize("spec", ["", "real", "fake:", "fake"])
def test_bad_specs(spec: str) -> None:
    with pytest.raises(ValueError, match="expected 'auto' or 'fake:<profile name or path>'"):
        parse_nvml_choice(spec)


def test_flag_wins_over_environment_which_wins_over_default() -> None:
    env = {"GPU_OPERATOR_NVML": "fake:t4-1x"}
    assert nvml_choice("fake:h200-8x", env) == "fake:h200-8x"
    assert nvml_choice(None, env) == "fake:t4-1x"
    assert nvml_choice(None, {}) == "auto"


def test_the_common_flag() -> None:
    parser = argparse.ArgumentParser()
    add_nvml_option(parser)
    assert parser.parse_args([]).nvml is None
    assert parser.parse_args(["--nvml", "fake:t4-1x"]).nvml == "fake:t4-1x"


def test_open_a_simulated_node() -> None:
    nvml = open_nvml("fake:t4-1x")
    assert isinstance(nvml, LibraryNvml)
    assert nvml.source == "fake:t4-1x"
    assert nvml.devices()[0].name == "Tesla T4"
    nvml.close()


def test_unknown_profile() -> None:
    with pytest.raises(ProfileError):
        open_nvml("fake:gb200-nvl72")
