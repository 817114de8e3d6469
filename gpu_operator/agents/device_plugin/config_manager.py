"""`gpu-operator-agent config-manager`: switches the device plugin's config file by a node label.

NVIDIA's device plugin pods carry NVIDIA's `config-manager` twice: as the last init container (`ONESHOT=true`)
and as a sidecar. Both read the node's `nvidia.com/device-plugin.config` label (`NODE_LABEL`), pick the config of
that name from the mounted ConfigMap (`CONFIG_FILE_SRCDIR`, one file per key) and point `CONFIG_FILE_DST` at it;
the sidecar then sends `SIGNAL` (SIGHUP) to the program (`PROCESS_TO_SIGNAL`), which reloads. This agent does the
same with the same environment, for pods that run our device plugin (and GFD / MPS control daemon) agents:

* the config is the label's value; without one `DEFAULT_CONFIG`; without that the `FALLBACK_STRATEGIES` in order:
  `named` (a config called `default`), `single` (the only config there is), `empty` (no config file);
* the destination is a symbolic link to the chosen file (to `/dev/null` for the empty config), so an update of
  the ConfigMap reaches the program through the kubelet's own link swap; nothing happens when it already points
  there;
* the program is found among the pod's processes (`shareProcessNamespace`) by its command line: the words of
  `PROCESS_TO_SIGNAL` in order, the first compared by base name, so `gpu-operator-agent device-plugin` matches
  the Python console script whose argv starts with the interpreter;
* the node is read every `--poll-interval` seconds (a node watch in NVIDIA's, which needs more than a get).

A label naming a config that does not exist is an error: the init container exits 1 (the pod does not start
with a config nobody asked for); the sidecar logs it and keeps the config in force until the label is fixed,
rather than restarting in a loop as NVIDIA's does.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpu_operator.agents.kube.client import KubeClient
from gpu_operator.agents.kube.errors import KubeError
from gpu_operator.agents.kube.resources import NODES
from gpu_operator.agents.values import parse_bool

__all__ = [
    "NAME",
    "ConfigManagerError",
    "Settings",
    "choose_config",
    "link_config",
    "find_process",
    "ConfigManager",
    "main",
]

NAME = "config-manager"
PROGRAM = f"gpu-operator-agent {NAME}"
_log = logging.getLogger(__name__)

DEFAULT_LABEL = "nvidia.com/device-plugin.config"
DEFAULT_PROCESS = "nvidia-device-plugin"
NAMED_FALLBACK = "default"
FALLBACKS = ("named", "single", "empty")
EMPTY_CONFIG = "/dev/null"


class ConfigManagerError(RuntimeError):
    """A config that cannot be chosen or put in place, or a process that cannot be signalled."""


@dataclass(frozen=True, slots=True)
class Settings:
    node_name: str
    source_dir: str
    destination: str
    label: str = DEFAULT_LABEL
    default_config: str = ""
    fallbacks: tuple[str, ...] = ()
    oneshot: bool = False
    send_signal: bool = True
    signal: int = int(signal.SIGHUP)
    process: str = DEFAULT_PROCESS
    kubeconfig: str = ""
    poll_interval: float = 5.0


def _available(source_dir: str) -> list[str]:
    """The config names in the source directory (a mounted ConfigMap's `..data` entries are not configs)."""
    try:
        entries = sorted(os.listdir(source_dir))
    except OSError as error:
        raise ConfigManagerError(f"cannot list the configs in {source_dir}: {error.strerror}") from None
    return [e for e in entries if not e.startswith("..") and not os.path.isdir(os.path.join(source_dir, e))]


def choose_config(label_value: str, settings: Settings) -> str:
    """The config name to use ('' for the empty config). Raises ConfigManagerError."""
    names = _available(settings.source_dir)
    if not names:
        raise ConfigManagerError(f"no configuration files available in {settings.source_dir}")
    for wanted, why in ((label_value, f"{settings.label}={label_value}"), (settings.default_config, "DEFAULT_CONFIG")):
        if wanted:
            if wanted not in names:
                raise ConfigManagerError(f"{why}: no config named {wanted!r} (available: {', '.join(names)})")
            return wanted
    for fallback in settings.fallbacks:
        if fallback == "named" and NAMED_FALLBACK in names:
            return NAMED_FALLBACK
        if fallback == "single" and len(names) == 1:
            return names[0]
        if fallback == "empty":
            return ""
    raise ConfigManagerError(
        f"no {settings.label} label, no DEFAULT_CONFIG, and no fallback strategy "
        f"({', '.join(settings.fallbacks) or 'none set'}) found a config among {', '.join(names)}"
    )


def link_config(name: str, settings: Settings) -> bool:
    """Point the destination at config `name`; False when it already points there."""
    source = os.path.join(settings.source_dir, name) if name else EMPTY_CONFIG
    destination = settings.destination
    try:
        if os.path.lexists(destination):
            if os.path.realpath(destination) == os.path.realpath(source):
                return False
            os.unlink(destination)
        os.symlink(source, destination)
    except OSError as error:
        raise ConfigManagerError(f"cannot link {destination} to {source}: {error.strerror}") from None
    return True


def _command_lines(proc_root: str) -> Iterable[tuple[int, list[str]]]:
    for entry in os.listdir(proc_root):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(os.path.join(proc_root, entry, "cmdline"), "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        words = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
        if words:
            yield int(entry), words


def _matches(argv: Sequence[str], wanted: Sequence[str]) -> bool:
    for start in range(len(argv) - len(wanted) + 1):
        window = argv[start : start + len(wanted)]
        if os.path.basename(window[0]) == os.path.basename(wanted[0]) and list(window[1:]) == list(wanted[1:]):
            return True
    return False


def find_process(command: str, proc_root: str = "/proc") -> int:
    """The pid of the process whose command line holds `command`'s words; ConfigManagerError when none does."""
    wanted = command.split()
    if not wanted:
        raise ConfigManagerError("PROCESS_TO_SIGNAL is empty")
    for pid, argv in _command_lines(proc_root):
        if _matches(argv, wanted):
            return pid
    raise ConfigManagerError(f"no process {command!r} in this pod (is shareProcessNamespace set?)")


class ConfigManager:
    """Applies the label's config once (`apply`) or whenever it changes (`run`)."""

    def __init__(self, settings: Settings, read_label: Callable[[], str], *,
                 send: Callable[[int, int], None] = os.kill, proc_root: str = "/proc",
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.settings = settings
        self._read_label = read_label
        self._send = send
        self._proc_root = proc_root
        self._sleep = sleep

    def apply(self, label_value: str) -> bool:
        """Put the config `label_value` selects in place (and signal the program); whether it changed."""
        name = choose_config(label_value, self.settings)
        if not link_config(name, self.settings):
            _log.info("already configured with %s", name or "the empty config")
            return False
        _log.info("switched to %s", name or "the empty config")
        if self.settings.send_signal:
            pid = find_process(self.settings.process, self._proc_root)
            try:
                self._send(pid, self.settings.signal)
            except OSError as error:
                raise ConfigManagerError(f"cannot signal {self.settings.process} (pid {pid}): {error}") from None
            _log.info("sent signal %d to %s (pid %d)", self.settings.signal, self.settings.process, pid)
        return True

    def run(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Follow the label until `stop()`; a bad label is logged and the config in force is kept."""
        applied: str | None = None
        while not stop():
            try:
                value = self._read_label()
            except KubeError as error:
                _log.warning("cannot read node %s: %s", self.settings.node_name, error)
                value = applied
            if value is not None and value != applied:
                try:
                    self.apply(value)
                except ConfigManagerError as error:
                    _log.error("%s; keeping the config in force", error)
                applied = value
            self._sleep(self.settings.poll_interval)


def _signal_number(text: str) -> int:
    if not text.strip():
        return int(signal.SIGHUP)
    if not text.strip().isdigit():
        raise ConfigManagerError(f"SIGNAL={text!r}: expected a signal number such as 1 (SIGHUP)")
    return int(text)


def _fallbacks(text: str) -> tuple[str, ...]:
    chosen = tuple(f.strip() for f in text.split(",") if f.strip())
    unknown = [f for f in chosen if f not in FALLBACKS]
    if unknown:
        raise ConfigManagerError(f"FALLBACK_STRATEGIES: unknown strategy {', '.join(unknown)} "
                                 f"(expected {', '.join(FALLBACKS)})")
    return chosen


def _bool(environ: Mapping[str, str], name: str, default: bool) -> bool:
    text = environ.get(name, "")
    if not text:
        return default
    try:
        return parse_bool(text)
    except ValueError:
        raise ConfigManagerError(f"{name}={text!r}: expected true or false") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description="Switch the device plugin's config by a node label "
                                     "(settings from NVIDIA's config-manager variables).")
    parser.add_argument("--poll-interval", type=float, default=5.0, help="seconds between reads of the node")
    return parser


def settings_from(environ: Mapping[str, str], poll_interval: float = 5.0) -> Settings:
    """The settings from NVIDIA's config-manager variables. Raises ConfigManagerError naming the variable."""
    required = {name: environ.get(name, "") for name in ("NODE_NAME", "CONFIG_FILE_SRCDIR", "CONFIG_FILE_DST")}
    missing = [name for name, value in required.items() if not value]
    if missing:
        raise ConfigManagerError(f"{', '.join(missing)} must be set")
    return Settings(
        node_name=required["NODE_NAME"],
        source_dir=required["CONFIG_FILE_SRCDIR"],
        destination=required["CONFIG_FILE_DST"],
        label=environ.get("NODE_LABEL") or DEFAULT_LABEL,
        default_config=environ.get("DEFAULT_CONFIG", ""),
        fallbacks=_fallbacks(environ.get("FALLBACK_STRATEGIES", "")),
        oneshot=_bool(environ, "ONESHOT", False),
        send_signal=_bool(environ, "SEND_SIGNAL", True),
        signal=_signal_number(environ.get("SIGNAL", "")),
        process=environ.get("PROCESS_TO_SIGNAL") or DEFAULT_PROCESS,
        kubeconfig=environ.get("KUBECONFIG", ""),
        poll_interval=poll_interval,
    )


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None, *,
         kube: KubeClient | None = None) -> int:
    """Run the config-manager; returns the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    env = os.environ if environ is None else environ
    try:
        settings = settings_from(env, args.poll_interval)
        client = kube or KubeClient.from_environment(env, settings.kubeconfig or None)
    except (ConfigManagerError, KubeError) as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return 1

    def read_label() -> str:
        node = client.get(NODES, settings.node_name)
        return str(((node.get("metadata") or {}).get("labels") or {}).get(settings.label, ""))

    manager = ConfigManager(settings, read_label)
    if settings.oneshot:
        try:
            manager.apply(read_label())
        except (ConfigManagerError, KubeError) as error:
            print(f"{PROGRAM}: {error}", file=sys.stderr)
            return 1
        return 0
    manager.run()
    return 0
