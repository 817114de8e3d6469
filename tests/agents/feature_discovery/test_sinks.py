"""Label outputs: the features.d file (atomic replace, 0644, removal) and stdout."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from unittest import mock

import pytest

from gpu_operator.agents.feature_discovery.sinks import (
    FILE,
    NODE_FEATURE_API,
    SINK_FACTORIES,
    STDOUT,
    FeatureFileSink,
    SinkUnavailable,
    StreamSink,
    sink_kind,
)

LABELS = {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "1"}
TEXT = "nvidia.com/gpu.count=1\nnvidia.com/gpu.product=Tesla-T4\n"


def test_file_is_written_sorted_with_mode_0644(tmp_path: Path) -> None:
    target = tmp_path / "features.d" / "gfd"
    target.parent.mkdir()
    FeatureFileSink(target).publish(LABELS)
    assert target.read_text() == TEXT
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert list((target.parent / "gfd-tmp").iterdir()) == []


def test_publish_replaces_the_file_by_renaming(tmp_path: Path) -> None:
    target = tmp_path / "gfd"
    sink = FeatureFileSink(target)
    sink.publish(LABELS)
    before = target.stat().st_ino
    with mock.patch("gpu_operator.agents.feature_discovery.sinks.os.replace", wraps=os.replace) as replace:
        sink.publish({"nvidia.com/gpu.count": "2"})
    source, destination = replace.call_args.args
    assert Path(source).parent == tmp_path / "gfd-tmp" and Path(source).name.startswith("gfd-")
    assert Path(destination) == target
    assert target.read_text() == "nvidia.com/gpu.count=2\n"
    assert target.stat().st_ino != before


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "gfd"
    sink = FeatureFileSink(target)
    sink.publish(LABELS)
    with (
        mock.patch("gpu_operator.agents.feature_discovery.sinks.os.replace", side_effect=OSError("disk full")),
        pytest.raises(OSError, match="disk full"),
    ):
        sink.publish({"nvidia.com/gpu.count": "2"})
    assert target.read_text() == TEXT
    assert list((tmp_path / "gfd-tmp").iterdir()) == []


def test_withdraw_removes_the_file_and_the_temporary_directory(tmp_path: Path) -> None:
    target = tmp_path / "gfd"
    sink = FeatureFileSink(target)
    sink.publish(LABELS)
    sink.withdraw()
    assert not target.exists() and not (tmp_path / "gfd-tmp").exists()
    sink.withdraw()


def test_stream_sink() -> None:
    stream = io.StringIO()
    sink = StreamSink(stream)
    sink.publish(LABELS)
    sink.withdraw()
    assert stream.getvalue() == TEXT


def test_sink_selection_follows_gfds_flags() -> None:
    assert sink_kind("/etc/kubernetes/node-feature-discovery/features.d/gfd", False) == FILE
    assert sink_kind("", False) == STDOUT
    assert sink_kind("", True) == NODE_FEATURE_API
    assert isinstance(SINK_FACTORIES[FILE]("/tmp/gfd"), FeatureFileSink)
    assert isinstance(SINK_FACTORIES[STDOUT](""), StreamSink)
    with pytest.raises(SinkUnavailable, match="--use-node-feature-api=false"):
        SINK_FACTORIES[NODE_FEATURE_API]("")
