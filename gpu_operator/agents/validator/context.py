"""What a check works with: the settings, the host paths, the status directory, the API client, the clock.

One `Context` is built per run by the command line (or by a test, with its own paths, clock and sleep). The
Kubernetes client is created on first use, so checks that never talk to the API server (toolkit, the kernel
module checks) run without a cluster configuration.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpu_operator.agents.kube import KubeClient, KubeConfigError
from gpu_operator.agents.validator.errors import ValidationFailed
from gpu_operator.agents.validator.paths import Paths
from gpu_operator.agents.validator.pods import POD_TIMEOUT
from gpu_operator.agents.validator.retrying import Retry
from gpu_operator.agents.validator.settings import Settings
from gpu_operator.agents.validator.status import StatusDir

__all__ = ["RESOURCE_TIMEOUT", "Context", "Timing"]

#: How long the plugin check waits for the node to advertise GPUs (NVIDIA: 30 checks, 5 s apart).
RESOURCE_TIMEOUT = 150.0


@dataclass(frozen=True, slots=True)
class Timing:
    """Fixed waits of NVIDIA's validator: workload pods (60 x 5 s) and GPU resources on the node (30 x 5 s)."""

    pod_timeout: float = POD_TIMEOUT
    resource_timeout: float = RESOURCE_TIMEOUT


@dataclass
class Context:
    """Everything a check touches outside itself."""

    settings: Settings
    paths: Paths = field(default_factory=Paths)
    environ: Mapping[str, str] = field(default_factory=dict)
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    timing: Timing = field(default_factory=Timing)
    make_client: Callable[[Settings], KubeClient] | None = None
    run_command: Callable[[Sequence[str]], int] | None = None
    make_node: Callable[[Path, int, int], None] | None = None
    _client: KubeClient | None = None

    @property
    def status(self) -> StatusDir:
        return StatusDir(self.settings.output_dir)

    @property
    def retry(self) -> Retry:
        """`WITH_WAIT` and `SLEEP_INTERVAL_SECONDS` as a retry rule."""
        return Retry(self.settings.with_wait, float(self.settings.sleep_interval_seconds), self.sleep)

    def kube(self) -> KubeClient:
        """The API client (created on first use); ValidationFailed when there is no cluster configuration."""
        if self._client is None:
            try:
                if self.make_client is not None:
                    self._client = self.make_client(self.settings)
                else:
                    self._client = KubeClient.from_environment(self.environ, self.settings.kubeconfig or None)
            except KubeConfigError as error:
                raise ValidationFailed(f"error getting cluster config: {error}") from error
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
