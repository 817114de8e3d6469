"""Reading the device plugin's config file (YAML or JSON) with the plugin's own validation.

What the plugin refuses is refused here, with the same reasons: an unknown `version`, a sharing block without
resources, a resource without `replicas` or with fewer than 2, a resource name that is not a valid DNS
subdomain (after `nvidia.com/` is added), or a `devices` entry that is neither `all`, a positive count, nor a
list of GPU indices, MIG indices (`0:1`) and GPU/MIG UUIDs, and an `imex` section naming a channel other than 0.
`failRequestsGreaterThanOne` is taken as written; only when a block leaves it unset (absent or null) does the
default apply: true for `mps`, false for `timeSlicing`.
What the plugin ignores is ignored here with a warning: the `resources` section, per-resource `rename`, `devices`
other than `all`, and top-level keys the v1 format does not have.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gpu_operator.agents.plugin_config.model import (
    Imex,
    PluginConfig,
    ReplicatedDevices,
    ReplicatedResource,
    ReplicatedResources,
    Sharing,
)
from gpu_operator.facts.resource_names import qualified_resource_name

__all__ = ["PluginConfigError", "parse_plugin_config", "load_plugin_config", "resource_name"]

_log = logging.getLogger(__name__)

VERSION = "v1"
#: An index as Go's strconv.ParseUint reads it: ASCII digits only (Python's `isdigit` takes other scripts' too).
_INDEX = re.compile(r"[0-9]+")
_MIG_INDEX = re.compile(r"[0-9]+:[0-9]+")
_SHARED_SUFFIX = ".shared"
_TOP_LEVEL_KEYS = ("version", "flags", "resources", "sharing", "imex")
_IMEX_KEYS = ("channelIDs", "required")
#: The only IMEX channel the plugin hands out (as NVIDIA's v1 config allows).
IMEX_CHANNEL = 0


class PluginConfigError(ValueError):
    """The config file is one the device plugin would refuse."""


def _uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _device_reference(item: Any) -> str:
    """One entry of a `devices` list, checked the plugin's way, as a string."""
    if isinstance(item, bool):
        raise PluginConfigError(f"unsupported device reference {item!r}")
    if isinstance(item, int) and item >= 0:
        return str(item)
    text = str(item) if isinstance(item, str) else ""
    migs = text.removeprefix("MIG-").split("/")
    valid = (
        _INDEX.fullmatch(text) is not None
        or _MIG_INDEX.fullmatch(text) is not None
        or (text.startswith("GPU-") and _uuid(text[4:]))
        or (text.startswith("MIG-") and _uuid(text[4:]))
        or (
            text.startswith("MIG-GPU-")
            and len(migs) == 3
            and _uuid(migs[0].removeprefix("GPU-"))
            and all(_INDEX.fullmatch(part) for part in migs[1:])
        )
    )
    if not valid:
        raise PluginConfigError(f"unsupported device reference {item!r}")
    return text


def _devices(value: Any) -> ReplicatedDevices:
    if value is None or value == "all":
        return ReplicatedDevices()
    if isinstance(value, str):
        raise PluginConfigError(f"devices set as {value!r} but the only valid string is 'all'")
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise PluginConfigError(f"devices set as {value} but a count of devices must be > 0")
        return ReplicatedDevices(all=False, count=value)
    if isinstance(value, list):
        return ReplicatedDevices(all=False, references=tuple(_device_reference(item) for item in value))
    raise PluginConfigError(f"unrecognised devices spec {value!r}")


def resource_name(value: Any) -> str:
    """A resource name, fully qualified (`gpu` -> `nvidia.com/gpu`) and validated as the plugin's
    `NewResourceName` does (:mod:`gpu_operator.facts.resource_names`)."""
    if not isinstance(value, str) or not value:
        raise PluginConfigError(f"invalid resource name {value!r}")
    try:
        return qualified_resource_name(value)
    except ValueError as error:
        raise PluginConfigError(f"invalid resource name: {error}") from None


def _bool(block: Mapping[str, Any], key: str, where: str) -> bool:
    value = block.get(key, False)
    if not isinstance(value, bool):
        raise PluginConfigError(f"{where}.{key} must be true or false, not {value!r}")
    return value


def _resource(raw: Any, rename_by_default: bool, where: str) -> ReplicatedResource:
    if not isinstance(raw, Mapping):
        raise PluginConfigError(f"{where}: a resource must be a mapping")
    if "name" not in raw:
        raise PluginConfigError(f"{where}: no resource name specified")
    name = resource_name(raw["name"])
    if "replicas" not in raw:
        raise PluginConfigError(f"{where}: no replicas specified for {name}")
    replicas = raw["replicas"]
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 2:
        raise PluginConfigError(f"{where}: number of replicas for {name} must be >= 2, not {replicas!r}")
    devices = _devices(raw.get("devices"))
    if not devices.all:
        _log.warning("%s: devices of %s are not yet configurable; replicating all devices", where, name)
    if raw.get("rename"):
        resource_name(raw["rename"])
        _log.warning("%s: rename of %s is not yet supported; ignoring it", where, name)
    rename = name + _SHARED_SUFFIX if rename_by_default else ""
    return ReplicatedResource(name=name, replicas=replicas, rename=rename, devices=ReplicatedDevices())


def _fail_requests(block: Mapping[str, Any], where: str, unset: bool) -> bool:
    """`failRequestsGreaterThanOne` as written, or `unset` when the key is absent or null."""
    value = block.get("failRequestsGreaterThanOne")
    if value is None:
        return unset
    if not isinstance(value, bool):
        raise PluginConfigError(f"{where}.failRequestsGreaterThanOne must be true or false, not {value!r}")
    return value


def _block(raw: Any, where: str, fail_requests_unset: bool) -> ReplicatedResources | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise PluginConfigError(f"{where} must be a mapping")
    resources = raw.get("resources")
    if not isinstance(resources, list) or not resources:
        raise PluginConfigError(f"{where}: no resources specified")
    rename_by_default = _bool(raw, "renameByDefault", where)
    fail = _fail_requests(raw, where, fail_requests_unset)
    parsed = tuple(_resource(r, rename_by_default, f"{where}.resources[{i}]") for i, r in enumerate(resources))
    return ReplicatedResources(parsed, rename_by_default=rename_by_default, fail_requests_greater_than_one=fail)


def _sharing(raw: Any) -> Sharing:
    if raw is None:
        return Sharing()
    if not isinstance(raw, Mapping):
        raise PluginConfigError("sharing must be a mapping")
    return Sharing(
        time_slicing=_block(raw.get("timeSlicing"), "sharing.timeSlicing", fail_requests_unset=False),
        mps=_block(raw.get("mps"), "sharing.mps", fail_requests_unset=True),
    )


def _imex(raw: Any) -> Imex | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise PluginConfigError("imex must be a mapping with channelIDs and required")
    unknown = sorted(str(k) for k in raw if k not in _IMEX_KEYS)
    if unknown:
        raise PluginConfigError(f"imex: unknown key(s) {', '.join(unknown)}; expected {', '.join(_IMEX_KEYS)}")
    channels = raw.get("channelIDs")
    channels = [] if channels is None else channels
    if not isinstance(channels, list) or any(isinstance(c, bool) or not isinstance(c, int) for c in channels):
        raise PluginConfigError(f"imex.channelIDs must be a list of channel numbers, not {channels!r}")
    if any(c != IMEX_CHANNEL for c in channels):
        raise PluginConfigError(f"imex.channelIDs {channels}: only IMEX channel {IMEX_CHANNEL} is supported; "
                                f"use [{IMEX_CHANNEL}] or []")
    return Imex(channel_ids=tuple(dict.fromkeys(channels)), required=_bool(raw, "required", "imex"))


def parse_plugin_config(text: str) -> PluginConfig:
    """A config file's text (YAML, or JSON which is YAML too)."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise PluginConfigError(f"unmarshal error: {error}") from error
    document = {} if document is None else document
    if not isinstance(document, Mapping):
        raise PluginConfigError("a config file must be a mapping")
    version = document.get("version") or VERSION
    if version != VERSION:
        raise PluginConfigError(f"unknown version: {version}")
    flags = document.get("flags") or {}
    if not isinstance(flags, Mapping):
        raise PluginConfigError("flags must be a mapping")
    if document.get("resources"):
        _log.warning("customising the 'resources' field is not yet supported; ignoring it")
    for key in (k for k in document if k not in _TOP_LEVEL_KEYS):
        _log.warning("config file key %r is not part of the v1 format (%s); ignoring it", key,
                     ", ".join(_TOP_LEVEL_KEYS))
    return PluginConfig(version=version, flags=dict(flags), sharing=_sharing(document.get("sharing")),
                        imex=_imex(document.get("imex")))


def load_plugin_config(path: str | Path) -> PluginConfig:
    """Read and parse a config file; unreadable files raise PluginConfigError."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise PluginConfigError(f"error opening config file: {error}") from error
    return parse_plugin_config(text)
