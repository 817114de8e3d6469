"""Choosing the NVML behind an agent: the real driver or a simulated node.

`--nvml auto` (the default) uses the driver's library, searched under the operands' driver roots first;
`--nvml fake:<profile>` uses a simulated node, where `<profile>` is a shipped profile name (`h100-8x`) or the
path of a profile file. The environment variable `GPU_OPERATOR_NVML` gives the same choice; the flag wins.

`open_nvml` opens the choice. When NVML cannot start and the agent runs with `--fail-on-init-error=false`, it
returns a node with no GPUs (keeping the PCI view) instead of raising, as NVIDIA's programs do. A simulated node
reads the faults injected at run time from the file `GPU_OPERATOR_NVML_FAULTS` names, when it names one.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pynvml

from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.empty import EmptyNvml
from gpu_operator.agents.nvml.errors import NvmlError, NvmlLibraryNotFound
from gpu_operator.agents.nvml.interface import Nvml
from gpu_operator.agents.nvml.library import NvmlLibrary
from gpu_operator.agents.nvml.loader import LIBRARY_NAME, driver_roots, load_into_pynvml
from gpu_operator.agents.nvml.pci import PciBus, SysfsPciBus

__all__ = [
    "NVML_ENV",
    "AUTO",
    "FAKE_PREFIX",
    "NvmlChoice",
    "parse_nvml_choice",
    "nvml_choice",
    "add_nvml_option",
    "open_nvml",
]

_log = logging.getLogger(__name__)

NVML_ENV = "GPU_OPERATOR_NVML"
AUTO = "auto"
FAKE_PREFIX = "fake:"


@dataclass(frozen=True, slots=True)
class NvmlChoice:
    """`profile` is None for the real driver, else a profile name or path."""

    profile: str | None = None

    @property
    def simulated(self) -> bool:
        return self.profile is not None


def parse_nvml_choice(spec: str) -> NvmlChoice:
    """`auto` or `fake:<profile>`; raises ValueError for anything else."""
    text = spec.strip()
    if text == AUTO:
        return NvmlChoice()
    if text.startswith(FAKE_PREFIX) and text[len(FAKE_PREFIX) :]:
        return NvmlChoice(text[len(FAKE_PREFIX) :])
    raise ValueError(f"invalid NVML choice {spec!r}: expected 'auto' or 'fake:<profile name or path>'")


def nvml_choice(flag: str | None, environ: Mapping[str, str]) -> str:
    """The effective spec: the flag if given, else the environment, else `auto`."""
    return flag if flag is not None else environ.get(NVML_ENV, AUTO)


def add_nvml_option(parser: argparse.ArgumentParser) -> None:
    """The `--nvml` flag every agent accepts (default: unset, so the environment can decide)."""
    parser.add_argument(
        "--nvml",
        default=None,
        metavar="auto|fake:<profile>",
        help=f"NVML to use: the driver's ('auto') or a simulated node (env {NVML_ENV}; default auto)",
    )


@dataclass(frozen=True, slots=True)
class _Attempt:
    """The outcome of starting NVML: an opened node, or the failure; the PCI view either way."""

    pci: PciBus
    nvml: Nvml | None = None
    failure: NvmlError | None = None


def _attempt_simulated(reference: str, environ: Mapping[str, str]) -> _Attempt:
    # Imported here: a real node never loads the simulation (its profiles, and pydantic with them).
    from gpu_operator.agents.nvml.simulated import FAULTS_ENV, SimulatedPciBus, load_profile, open_simulated

    profile = load_profile(reference)
    pci = SimulatedPciBus(profile)
    try:
        return _Attempt(pci, nvml=open_simulated(profile, faults_file=environ.get(FAULTS_ENV) or None))
    except NvmlError as error:
        return _Attempt(pci, failure=error)


def _attempt_real(roots: Iterable[str], sysfs_root: str) -> _Attempt:
    pci = SysfsPciBus(sysfs_root)
    searched = tuple(roots)
    path = load_into_pynvml(searched)
    library: NvmlLibrary = pynvml  # type: ignore[assignment]
    try:
        return _Attempt(pci, nvml=LibraryNvml.open(library, pci, source=path or LIBRARY_NAME))
    except NvmlLibraryNotFound as error:
        where = ", ".join(searched) or "no driver root"
        message = f"{LIBRARY_NAME} not found under {where} nor by the dynamic loader"
        return _Attempt(pci, failure=NvmlLibraryNotFound(message, error.code))
    except NvmlError as error:
        return _Attempt(pci, failure=error)


def open_nvml(
    spec: str,
    *,
    fail_on_init_error: bool = True,
    environ: Mapping[str, str] | None = None,
    driver_root_paths: Iterable[str] = (),
    sysfs_root: str = "/sys",
) -> Nvml:
    """Open the NVML named by `spec` (`auto` or `fake:<profile>`).

    `driver_root_paths` are searched for the library before the roots named in the environment and the
    defaults. Raises ValueError for a bad spec or profile, and the `NvmlError` of a failed init unless
    `fail_on_init_error` is False, in which case a node with no GPUs is returned.
    """
    choice = parse_nvml_choice(spec)
    env = os.environ if environ is None else environ
    if choice.profile is not None:
        attempt = _attempt_simulated(choice.profile, env)
    else:
        attempt = _attempt_real(driver_roots(env, driver_root_paths), sysfs_root)
    if attempt.nvml is not None:
        return attempt.nvml
    failure = attempt.failure or NvmlError("NVML could not be started")
    if fail_on_init_error:
        raise failure
    _log.warning("NVML unavailable (%s); continuing with no GPUs", failure)
    return EmptyNvml(attempt.pci, failure)
