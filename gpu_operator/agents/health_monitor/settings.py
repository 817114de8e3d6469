"""The health monitor's settings: flags and environment variables, each with its default and why.

* `--node-name` / `NODE_NAME` (required): the Node the conditions go on;
* `--nvml` / `GPU_OPERATOR_NVML` (`auto`): `fake:<profile>` simulates the node;
* `--validations-dir` / `VALIDATIONS_DIR` (`/run/nvidia/validations`; `''`: no driver validation to wait for);
* `--startup-grace-seconds` / `STARTUP_GRACE_SECONDS` (120): readings count this long after `driver-ready`;
* `--health-interval-seconds` / `HEALTH_INTERVAL_SECONDS` (10): how often the health fields are read;
* `--heartbeat-seconds` / `HEARTBEAT_SECONDS` (300, NPD's default): conditions are written this often at least;
* `--condition-qps`, `--condition-burst` (1, 5): the token bucket of `nodes/status` writes;
* `--event-qps`, `--event-burst`, `--event-interval-seconds` (0.2, 25, 10): Event writes, repeats summed per
  interval;
* `--reset-idle-timeout-seconds` / `RESET_IDLE_TIMEOUT_SECONDS` (60): how long a reset waits for the GPUs'
  processes to end;
* `--nvlink-crc-per-second` (100, DCGM's `DCGM_LIMIT_MAX_NVLINK_CRC_ERROR`);
* `--host-actions-socket` / `HOST_ACTIONS_SOCKET` (`''`): the privileged helper's socket; without it a real node
  neither resets nor reboots (a simulated node does both in process);
* `--serve-host-actions` / `SERVE_HOST_ACTIONS` (false): run as the privileged helper (:mod:`.host_server`);
* `--pod-resources-socket` / `POD_RESOURCES_SOCKET` (`''`): the kubelet's pod-resources socket, read for the pods
  holding the faulty GPUs where the remediation may drain partially (:mod:`.holders`); `''`: not read;
* `--xid-ignore` / `XID_IGNORE` (`''`): XIDs that raise nothing (the config's `remediation.xids.ignore`);
* `--xid-classify` / `XID_CLASSIFY` (`''`): `<xid>=<fault class>,...`, XIDs put in another class than the
  catalog's (`remediation.xids.classify`), so the node writes the condition the controller's rules expect.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpu_operator.agents import options
from gpu_operator.agents.health_monitor.readings import Thresholds
from gpu_operator.agents.nvml import NVML_ENV
from gpu_operator.agents.nvml.selection import parse_nvml_choice
from gpu_operator.agents.options import Option, flag_option
from gpu_operator.faults import FAULT_CLASSES
from gpu_operator.remediation import XidOverrides

__all__ = ["OPTIONS", "Settings", "SettingsError", "build_parser", "resolve_settings"]


class SettingsError(ValueError):
    """A flag or variable the monitor refuses."""


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError("must be a positive number")
    return value


def _not_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise ValueError("must be 0 or more")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("must be 1 or more")
    return value


def _nvml(text: str) -> str:
    parse_nvml_choice(text)
    return text


def _xids(text: str) -> frozenset[int]:
    codes = frozenset(int(part) for part in text.split(",") if part.strip())
    if any(code < 1 for code in codes):
        raise ValueError("XIDs are positive numbers")
    return codes


def _classify(text: str) -> tuple[tuple[int, str], ...]:
    pairs = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        code, _, name = part.partition("=")
        if name not in FAULT_CLASSES:
            raise ValueError(f"{part!r}: write <xid>=<fault class>, a class of {', '.join(FAULT_CLASSES)}")
        pairs.append((int(code), name))
    return tuple(pairs)


OPTIONS: tuple[Option, ...] = (
    Option("node", ("--node-name",), ("NODE_NAME",), str, "", "this node (required)"),
    Option("nvml", ("--nvml",), (NVML_ENV,), _nvml, "auto", "auto, or fake:<profile> for a simulated node"),
    Option("validations_dir", ("--validations-dir",), ("VALIDATIONS_DIR",), str, "/run/nvidia/validations",
           "the validator's status files ('' : none to wait for)"),
    Option("startup_grace", ("--startup-grace-seconds",), ("STARTUP_GRACE_SECONDS",), _not_negative, 120.0,
           "readings count this long after the driver was validated"),
    Option("health_interval", ("--health-interval-seconds",), ("HEALTH_INTERVAL_SECONDS",), _positive, 10.0,
           "seconds between health passes"),
    Option("heartbeat", ("--heartbeat-seconds",), ("HEARTBEAT_SECONDS",), _positive, 300.0,
           "conditions are written at least this often"),
    Option("condition_qps", ("--condition-qps",), ("CONDITION_QPS",), _positive, 1.0, "condition writes a second"),
    Option("condition_burst", ("--condition-burst",), ("CONDITION_BURST",), _count, 5, "condition writes at once"),
    Option("event_qps", ("--event-qps",), ("EVENT_QPS",), _positive, 0.2, "Event writes a second"),
    Option("event_burst", ("--event-burst",), ("EVENT_BURST",), _count, 25, "Event writes at once"),
    Option("event_interval", ("--event-interval-seconds",), ("EVENT_INTERVAL_SECONDS",), _positive, 10.0,
           "an Event's count is written at most this often"),
    Option("reset_idle_timeout", ("--reset-idle-timeout-seconds",), ("RESET_IDLE_TIMEOUT_SECONDS",),
           _not_negative, 60.0, "how long a reset waits for the GPUs' processes to end"),
    Option("nvlink_crc_per_second", ("--nvlink-crc-per-second",), (), _positive, 100.0,
           "NVLink CRC errors a second that make a finding"),
    Option("host_actions_socket", ("--host-actions-socket",), ("HOST_ACTIONS_SOCKET",), str, "",
           "the privileged host-actions helper's socket"),
    flag_option("serve_host_actions", ("--serve-host-actions",), "SERVE_HOST_ACTIONS", False,
                "run as the privileged host-actions helper on --host-actions-socket"),
    Option("pod_resources_socket", ("--pod-resources-socket",), ("POD_RESOURCES_SOCKET",), str, "",
           "the kubelet's pod-resources socket ('': not read)"),
    Option("xid_ignore", ("--xid-ignore",), ("XID_IGNORE",), _xids, frozenset(), "XIDs that raise nothing"),
    Option("xid_classify", ("--xid-classify",), ("XID_CLASSIFY",), _classify, (),
           "<xid>=<fault class>,... (the config's remediation.xids.classify)"),
)


@dataclass(frozen=True, slots=True)
class Settings:
    node: str
    nvml: str = "auto"
    validations_dir: str = "/run/nvidia/validations"
    startup_grace: float = 120.0
    health_interval: float = 10.0
    heartbeat: float = 300.0
    condition_qps: float = 1.0
    condition_burst: int = 5
    event_qps: float = 0.2
    event_burst: int = 25
    event_interval: float = 10.0
    reset_idle_timeout: float = 60.0
    nvlink_crc_per_second: float = 100.0
    host_actions_socket: str = ""
    serve_host_actions: bool = False
    pod_resources_socket: str = ""
    xid_ignore: frozenset[int] = frozenset()
    xid_classify: tuple[tuple[int, str], ...] = ()
    #: Changes are collected this long before a write, so that a burst of faults is one write.
    batch_seconds: float = 0.02
    #: How often a reset looks at the GPUs' processes while it waits for them to end.
    idle_poll: float = 1.0

    @property
    def xid_overrides(self) -> XidOverrides:
        """The catalog as the config overrides it (the same overrides the controller's policy holds)."""
        return XidOverrides(self.xid_ignore, dict(self.xid_classify))

    @property
    def thresholds(self) -> Thresholds:
        return Thresholds(nvlink_crc_per_second=self.nvlink_crc_per_second)

    @property
    def simulated(self) -> bool:
        return parse_nvml_choice(self.nvml).simulated


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Turn GPU faults into Node conditions and Events, and "
                                                            "reset GPUs or reboot the node when the remediation asks.")
    options.add_arguments(parser, OPTIONS)
    return parser


def resolve_settings(argv: Sequence[str], environ: Mapping[str, str], prog: str) -> Settings:
    """The settings from the command line, else the environment, else the defaults; SettingsError otherwise."""
    args = build_parser(prog).parse_args(list(argv))
    values = options.resolve(OPTIONS, vars(args), environ, SettingsError)
    if not values["node"] and not values["serve_host_actions"]:
        raise SettingsError("the node is unknown: set NODE_NAME (the pod's spec.nodeName) or --node-name")
    if values["serve_host_actions"] and not values["host_actions_socket"]:
        raise SettingsError("--serve-host-actions needs --host-actions-socket (HOST_ACTIONS_SOCKET): where to listen")
    return Settings(**values)
