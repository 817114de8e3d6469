"""The labelling loop: label, publish, sleep, repeat - until a signal or an error, as GFD does.

One *run* starts by (re)loading the settings and the config file and taking the timestamp; it then labels
every sleep interval. SIGHUP ends the run and starts a new one (new config, new timestamp), and so does a change
of the config file itself (where it points or when it was written): NVIDIA's config-manager sidecar finds the
process to signal by its argv[0], which for a Python console script is the interpreter, so next to our agent the
sidecar does not signal and the agent notices the switched config on its own. SIGINT, SIGTERM and SIGQUIT end
the agent. With `--oneshot` the run labels once and the agent exits; with an `infinite`
sleep interval it labels once and waits for a signal.

When a run ends GFD withdraws its labels (deletes its features.d file) so that NFD drops them - except after a
oneshot run, with an infinite sleep, with stdout output or in NodeFeature mode. Errors end the agent with a
non-zero status, after the same clean-up.

NVML is opened once, with the first run's settings, and closed when the agent ends.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from gpu_operator.agents.feature_discovery.errors import LabelError
from gpu_operator.agents.feature_discovery.labels import (
    LabelPolicy,
    node_labels,
    take_snapshot,
)
from gpu_operator.agents.feature_discovery.publishing import PublishFailed
from gpu_operator.agents.feature_discovery.settings import Settings
from gpu_operator.agents.feature_discovery.sinks import FILE, LabelSink, sink_kind
from gpu_operator.agents.nvml import Nvml, NvmlError
from gpu_operator.agents.signals import RELOAD, SignalSource

__all__ = ["AgentFailure", "Dependencies", "run", "withdraws_on_exit", "read_machine_type", "config_identity"]

_log = logging.getLogger(__name__)


class AgentFailure(Exception):
    """The agent cannot continue; the message is the one-line reason shown to the operator."""


class _End(Enum):
    RESTART = "restart"
    EXIT = "exit"


@dataclass(frozen=True, slots=True)
class Dependencies:
    """Everything the loop touches outside itself (tests replace any of it)."""

    load_settings: Callable[[], Settings]
    open_nvml: Callable[[Settings], Nvml]
    make_sink: Callable[[Settings, Nvml], LabelSink]
    read_machine_type: Callable[[str], str | None]
    signals: SignalSource
    clock: Callable[[], float]


def read_machine_type(path: str) -> str | None:
    """The machine-type file's content, or None when there is no path or it cannot be read."""
    if not path:
        return None
    try:
        with open(path) as stream:
            return stream.read()
    except OSError as error:
        _log.warning("cannot read machine type file %s: %s", path, error)
        return None


def withdraws_on_exit(settings: Settings) -> bool:
    """Whether GFD would delete its output when a run ends with these settings."""
    kind = sink_kind(settings.output_file, settings.use_node_feature_api)
    return kind == FILE and not settings.oneshot and settings.sleep_interval is not None


def config_identity(path: str) -> tuple[str, float] | None:
    """What the config file is now: the file it resolves to and when that was written (None: no file)."""
    if not path:
        return None
    try:
        return os.path.realpath(path), os.stat(path).st_mtime
    except OSError:
        return None


def _one_run(settings: Settings, nvml: Nvml, sink: LabelSink, deps: Dependencies) -> _End:
    policy = LabelPolicy(settings.mig_strategy, settings.plugin_config.sharing)
    now = None if settings.no_timestamp else int(deps.clock())
    config = config_identity(settings.config_file)
    try:
        while True:
            machine_type = deps.read_machine_type(settings.machine_type_file)
            labels = node_labels(take_snapshot(nvml), policy, machine_type, now)
            if len(labels) <= 1:
                _log.warning("No labels generated from any source")
            sink.publish(labels)
            if settings.oneshot:
                return _End.EXIT
            received = deps.signals.wait(settings.sleep_interval)
            if received is None:
                if config_identity(settings.config_file) != config:
                    _log.info("config file %s changed, restarting", settings.config_file)
                    return _End.RESTART
                continue
            _log.info("received signal %d, %s", received, "restarting" if received == RELOAD else "shutting down")
            return _End.RESTART if received == RELOAD else _End.EXIT
    except (LabelError, NvmlError, OSError, PublishFailed) as error:
        raise AgentFailure(f"error generating labels: {error}") from error
    finally:
        if withdraws_on_exit(settings):
            sink.withdraw()


def run(deps: Dependencies) -> int:
    """Run until told to stop; returns the exit status. Raises AgentFailure for errors."""
    nvml: Nvml | None = None
    try:
        while True:
            settings = deps.load_settings()
            if nvml is None:
                nvml = deps.open_nvml(settings)
            sink = deps.make_sink(settings, nvml)
            if _one_run(settings, nvml, sink, deps) is _End.EXIT:
                return 0
    finally:
        if nvml is not None:
            nvml.close()
