"""Where labels go: a `LabelSink` publishes a label set and can withdraw it again.

* `FeatureFileSink` writes NFD's features.d format (`key=value` lines) atomically: the text goes to a temporary
  file in a `gfd-tmp` directory beside the target, which is then renamed over it (mode 0644), so NFD never
  reads half a file. Withdrawing removes the file and the `gfd-tmp` directory, so NFD drops the labels.
* `StreamSink` prints the lines (GFD's `--output-file ""`); there is nothing to withdraw.

:data:`SINK_FACTORIES` builds the sinks that need nothing but the output setting. Publishing a `NodeFeature` object
through the API server needs the node, the namespace and API access, so :mod:`.publishing` builds that sink (and
adds the GPU inventory around any sink). Lines are written in sorted order (GFD's order is Go's random map order,
so any order is faithful).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol, TextIO

__all__ = [
    "LabelSink",
    "FeatureFileSink",
    "StreamSink",
    "SinkUnavailable",
    "SINK_FACTORIES",
    "FILE",
    "STDOUT",
    "NODE_FEATURE_API",
    "sink_kind",
    "format_labels",
]

_log = logging.getLogger(__name__)

TEMPORARY_DIRECTORY = "gfd-tmp"
FILE_MODE = 0o644

FILE = "file"
STDOUT = "stdout"
NODE_FEATURE_API = "node-feature-api"


class SinkUnavailable(Exception):
    """The configured output cannot be used by this build or in this environment."""


class LabelSink(Protocol):
    """An output for node labels."""

    def publish(self, labels: Mapping[str, str]) -> None: ...

    def withdraw(self) -> None: ...


def format_labels(labels: Mapping[str, str]) -> str:
    """features.d text: one `key=value` line per label."""
    return "".join(f"{key}={value}\n" for key, value in sorted(labels.items()))


class FeatureFileSink:
    """An NFD features.d file, replaced atomically on every publish."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).absolute()
        self._temporary = self.path.parent / TEMPORARY_DIRECTORY

    def publish(self, labels: Mapping[str, str]) -> None:
        self._temporary.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix="gfd-", dir=self._temporary)
        try:
            with os.fdopen(descriptor, "w") as stream:
                stream.write(format_labels(labels))
            os.chmod(temporary, FILE_MODE)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        _log.info("wrote %d labels to %s", len(labels), self.path)

    def withdraw(self) -> None:
        shutil.rmtree(self._temporary, ignore_errors=True)
        try:
            self.path.unlink()
        except FileNotFoundError:
            return
        except OSError as error:
            _log.warning("error removing output file %s: %s", self.path, error)
            return
        _log.info("removed %s", self.path)


class StreamSink:
    """Labels printed to a stream (stdout by default)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def publish(self, labels: Mapping[str, str]) -> None:
        stream = self._stream or sys.stdout
        stream.write(format_labels(labels))
        stream.flush()

    def withdraw(self) -> None:
        return None


def sink_kind(output_file: str, use_node_feature_api: bool) -> str:
    """Which sink GFD's flags select: the NodeFeature API, stdout (empty output file) or the file."""
    if use_node_feature_api:
        return NODE_FEATURE_API
    return STDOUT if output_file == "" else FILE


def _no_node_feature_publisher(output_file: str) -> LabelSink:
    raise SinkUnavailable(
        "the NodeFeature API needs the node, the namespace and API access (see publishing.build_sink), "
        "not just the output file; set --use-node-feature-api=false (GFD_USE_NODE_FEATURE_API=false) "
        "to write the features.d file"
    )


#: Sink kind -> factory taking the output file setting (the NodeFeature API is built by `publishing`).
SINK_FACTORIES: dict[str, Callable[[str], LabelSink]] = {
    FILE: FeatureFileSink,
    STDOUT: lambda _: StreamSink(),
    NODE_FEATURE_API: _no_node_feature_publisher,
}
