"""HPC job mapping (`--hpc-job-mapping-dir`): job ids a workload manager writes per GPU, as `hpc_job` labels.

A workload manager (Slurm prolog/epilog scripts, for instance) keeps one file per GPU in a host directory,
named by the GPU's index, with one job id per line. Every series of that GPU is repeated once per job with an
`hpc_job` label; GPUs without a file keep their single series. Other files and directories are ignored.
"""

from __future__ import annotations

import logging
from pathlib import Path

__all__ = ["HPC_JOB_LABEL", "read_job_mapping"]

_log = logging.getLogger(__name__)

HPC_JOB_LABEL = "hpc_job"


def read_job_mapping(directory: str) -> dict[int, tuple[str, ...]]:
    """GPU index -> job ids; empty (with an error logged) when the directory cannot be read."""
    try:
        entries = sorted(Path(directory).iterdir())
    except OSError as error:
        _log.error("cannot read HPC job mapping directory %s: %s; ignoring it", directory, error)
        return {}
    jobs: dict[int, tuple[str, ...]] = {}
    for entry in entries:
        if not entry.name.isdigit() or not entry.is_file():
            continue
        try:
            jobs[int(entry.name)] = tuple(entry.read_text().splitlines())
        except OSError as error:
            _log.error("cannot read HPC job file %s: %s", entry, error)
    return jobs
