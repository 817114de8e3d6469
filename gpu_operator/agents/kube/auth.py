"""Bearer tokens for API requests: a fixed token, or a token file that kubelet keeps rotating.

Projected service account tokens expire (an hour by default) and kubelet rewrites the file well before that,
so a long-running agent must not read the file once and keep the token forever. `TokenSource` re-reads the file
when the cached copy is older than `refresh_seconds`, as client-go does, and keeps the last good token when a
read fails in between.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from gpu_operator.agents.kube.errors import KubeConfigError

__all__ = ["REFRESH_SECONDS", "TokenSource"]

#: How long a token read from a file is used before the file is read again.
REFRESH_SECONDS = 60.0


class TokenSource:
    """The current bearer token (None when the configuration has none)."""

    def __init__(
        self,
        token: str | None = None,
        token_file: str | None = None,
        *,
        refresh_seconds: float = REFRESH_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fixed = token
        self._file = Path(token_file) if token_file else None
        self._refresh = refresh_seconds
        self._clock = clock
        self._cached: str | None = None
        self._read_at = float("-inf")
        self._lock = threading.Lock()

    def _read(self) -> str:
        assert self._file is not None
        try:
            return self._file.read_text().strip()
        except OSError as error:
            raise KubeConfigError(f"cannot read the token file {self._file}: {error}") from error

    def token(self) -> str | None:
        if self._fixed is not None or self._file is None:
            return self._fixed
        with self._lock:
            now = self._clock()
            if self._cached is None or now - self._read_at >= self._refresh:
                try:
                    self._cached = self._read()
                    self._read_at = now
                except KubeConfigError:
                    if self._cached is None:
                        raise
            return self._cached
