"""Running a command on the node for the MIG manager (nvidia-ctk, systemctl, the driver's reset): one runner.

A runner takes the command line and gives back its exit status and combined output; tests replace it. A
command that cannot start, or outlives its timeout, reads as status 127 with the reason as output, so callers
handle one failure shape.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence

__all__ = ["Runner", "command_runner"]

#: Runs a command, returning (exit status, combined output).
Runner = Callable[[Sequence[str]], tuple[int, str]]


def command_runner(timeout_seconds: float) -> Runner:
    """A runner of real commands, each stopped after `timeout_seconds`."""

    def run(command: Sequence[str]) -> tuple[int, str]:
        try:
            done = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout_seconds, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            return 127, str(error)
        return done.returncode, (done.stdout + done.stderr).strip()

    return run
