"""Helm values the chart does more with than copy into the ClusterPolicy.

* `devicePlugin.config`, `migManager.config`, `dcgmExporter.config` — `name` (and `default`) go into the
  ClusterPolicy; with `create: true` the chart also creates that ConfigMap from `data`. Our document keeps the
  name in `operator` and the contents in `configs` (parsed: device-plugin configs and the MIG config are YAML text
  in `data`, the metrics list is CSV text).
* `cdi.nriPluginEnabled` — written only when CDI is enabled, and the chart refuses it without CDI or the toolkit.
* `operator.defaultRuntime` — the container runtime of the GPU nodes. NVIDIA's operator has detected it from the
  nodes since v1.9 and only falls back to this field, so a user who set `crio` or `containerd` was describing
  their nodes: it becomes `cluster.containerRuntime`, which the toolkit and the runtime-class rule are rendered
  for. `docker` was the chart's own default up to v24.9 and says nothing about the nodes (Kubernetes dropped
  dockershim in 1.24): it is not imported, and the note says how to ask for Docker (cri-dockerd) explicitly.
* `dcgmExporter.serviceMonitor` — merged over the chart's block, as Helm does. The chart's `enabled: true` means
  "where the ServiceMonitor CRD exists" (NVIDIA checks at runtime), which is our unset `enabled`, decided by
  `cluster.prometheusOperator`; a block that is the chart's own is not written at all. A block the user shaped
  (labels, interval, relabelings) and left enabled was written for their Prometheus Operator, so it also sets
  `cluster.prometheusOperator: true` (visible in the document; set it false where the CRDs are absent).
* `node-feature-discovery` and `global` — the subchart's values, and the globals Helm passes to every subchart:
  both are merged into the NFD chart's values (`nfd.values`, whose default is what NVIDIA's chart gives it). The
  NFD chart reads `global.imagePullSecrets`; the GPU Operator chart itself reads no global value, so the rest of
  `global:` has no effect (a note says so, and that a parent chart's values need their `gpu-operator:` subtree).
* `migManager.config.name: default-mig-parted-config` — the v23.x/v24.3 charts' default, naming the ConfigMap the
  operator creates itself; the MIG manager operand here creates that ConfigMap, so the name means "the default".
"""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

from gpu_operator.config.importers.helm_rules import Handle, Translation
from gpu_operator.config.importers.paths import described, get_path, is_empty, merge_over
from gpu_operator.config.yaml_reader import parse_yaml_value

__all__ = [
    "DEVICE_PLUGIN_CONFIG", "MIG_MANAGER_CONFIG", "DCGM_EXPORTER_CONFIG", "NRI_PLUGIN", "DEFAULT_RUNTIME",
    "SERVICE_MONITOR", "NFD_VALUES", "GLOBAL_VALUES", "UPGRADE_POLICY",
]

#: the only key of the MIG ConfigMap that mig-manager reads
MIG_CONFIG_KEY = "config.yaml"
#: the MIG ConfigMap the operand creates, which older charts named explicitly by default
DEFAULT_MIG_CONFIG_MAP = "default-mig-parted-config"
#: runtimes a values file may name, and those that describe the nodes (docker was the chart's default)
RUNTIMES = ("containerd", "crio", "docker")
NODE_RUNTIMES = ("containerd", "crio")


def _known_keys(t: Translation, path: str, value: Mapping[str, Any], known: tuple[str, ...]) -> None:
    for key in value:
        if key not in known:
            t.problem(f"{path}.{key}", f"unknown key; this block takes {', '.join(known)}")


def _yaml_text(t: Translation, path: str, text: Any) -> Any:
    """YAML text (the form `data` values take) parsed, a mapping as it is; None (and a problem) when unreadable."""
    if not isinstance(text, str):
        return text
    try:
        return parse_yaml_value(text) or {}
    except ValueError as error:
        t.problem(path, str(error))
        return None


def _create_contents(t: Translation, path: str, config: Mapping[str, Any], *, data_required: bool) -> bool:
    """Check `create`/`name`/`data` together; True when the chart would create the ConfigMap from `data`."""
    create, name, data = bool(config.get("create")), config.get("name") or "", config.get("data")
    if create and not name:
        t.problem(f"{path}.name", "required with create: true; it names the ConfigMap the chart creates")
    if create and is_empty(data) and data_required:
        t.problem(f"{path}.data", "required with create: true; list the contents of the ConfigMap to create")
    if not create and not is_empty(data):
        t.problem(
            f"{path}.data",
            "only used with create: true (the chart ignores it otherwise); set create: true to create the "
            "ConfigMap from data, or remove data to use the existing ConfigMap named by name",
        )
    return create and bool(name) and not is_empty(data)


def _device_plugin_config(t: Translation, path: str, config: Any) -> None:
    if not _is_block(t, path, config):
        return
    _known_keys(t, path, config, ("create", "name", "default", "data"))
    name, default = config.get("name") or "", config.get("default") or ""
    if default and not name:
        t.problem(f"{path}.default", "only takes effect with config.name; the chart leaves the config out without it")
    if name:
        t.write("operator.devicePlugin.config", {"name": str(name), "default": str(default)})
    if not _create_contents(t, path, config, data_required=True):
        return
    data = config["data"]
    if not isinstance(data, Mapping):
        t.problem(f"{path}.data", "must map config names to device-plugin configs (YAML text)")
        return
    parsed = {str(key): _yaml_text(t, f"{path}.data.{key}", text) for key, text in data.items()}
    t.write("configs.devicePlugin", {key: contents for key, contents in parsed.items() if contents is not None})


def _mig_manager_config(t: Translation, path: str, config: Any) -> None:
    if not _is_block(t, path, config):
        return
    _known_keys(t, path, config, ("create", "name", "default", "data"))
    name = config.get("name") or ""
    if name == DEFAULT_MIG_CONFIG_MAP and is_empty(config.get("data")):
        name = ""
    block: dict[str, Any] = {"default": str(t.value(f"{path}.default", "operator.migManager.config.default"))}
    if name:
        block["name"] = str(name)
    t.write("operator.migManager.config", block)
    # the chart skips the ConfigMap when data is empty, so create: true without data names an existing one
    if not _create_contents(t, path, config, data_required=False):
        return
    data = config["data"]
    if not isinstance(data, Mapping) or set(data) != {MIG_CONFIG_KEY}:
        t.problem(f"{path}.data", f"must hold one key, {MIG_CONFIG_KEY}, with the mig-parted config as YAML text")
        return
    contents = _yaml_text(t, f"{path}.data.{MIG_CONFIG_KEY}", data[MIG_CONFIG_KEY])
    if contents is not None:
        t.write("configs.migManager", contents)


def _dcgm_exporter_config(t: Translation, path: str, config: Any) -> None:
    if not _is_block(t, path, config):
        return
    _known_keys(t, path, config, ("create", "name", "data"))
    if config.get("name"):
        t.write("operator.dcgmExporter.config", {"name": str(config["name"])})
    if not _create_contents(t, path, config, data_required=True):
        return
    if not isinstance(config["data"], str):
        t.problem(f"{path}.data", "must be the metrics CSV as text: one 'DCGM_FI_<FIELD>, <type>, <help>' per line")
        return
    t.write("configs.dcgmExporter", config["data"])


def _nri_plugin(t: Translation, path: str, enabled: Any) -> None:
    if is_empty(enabled):
        return
    cdi = t.value("cdi.enabled", "operator.cdi.enabled")
    toolkit = t.value("toolkit.enabled", "operator.toolkit.enabled")
    if not cdi:
        t.problem(path, "the chart refuses the NRI plugin when cdi.enabled is false; enable CDI or turn this off")
    if not toolkit:
        t.problem(path, "the chart refuses the NRI plugin when toolkit.enabled is false; enable the toolkit or turn "
                        "this off")
    if cdi and toolkit:
        t.write("operator.cdi.nriPluginEnabled", bool(enabled))


def _default_runtime(t: Translation, path: str, runtime: Any) -> None:
    if is_empty(runtime):
        return
    if runtime not in RUNTIMES:
        t.problem(path, f"{runtime!r} is not a container runtime; use {', '.join(RUNTIMES)}")
    elif runtime in NODE_RUNTIMES:
        t.write("cluster.containerRuntime", runtime)
        t.write("operator.operator.defaultRuntime", runtime)


def _default_runtime_note(runtime: Any) -> str | None:
    if runtime != "docker":
        return None
    return (
        "docker was the chart's default up to v24.9, and NVIDIA's operator detects the runtime from the nodes; "
        "the operands are rendered for containerd (cluster.containerRuntime). If your nodes run Docker through "
        "cri-dockerd, set cluster.containerRuntime: docker in the document"
    )


#: the v26.7.0 chart's `dcgmExporter.serviceMonitor` block, without its `enabled: true`
_CHART_SERVICE_MONITOR: dict[str, Any] = {
    "interval": "15s", "scrapeTimeout": "10s", "honorLabels": False, "additionalLabels": {}, "relabelings": [],
}


def _service_monitor(t: Translation, path: str, value: Any) -> None:
    if value is not None and not _is_block(t, path, value):
        return
    merged = merge_over({"enabled": True, **_CHART_SERVICE_MONITOR}, value or {})
    if "enabled" not in merged:
        # `enabled: null` deletes the chart's true, and NVIDIA reads an absent switch as off
        merged["enabled"] = False
    elif merged["enabled"] is True:
        del merged["enabled"]
    if merged == _CHART_SERVICE_MONITOR:
        return
    t.write("operator.dcgmExporter.serviceMonitor", merged)
    if "enabled" not in merged:
        # the user shaped this ServiceMonitor for their Prometheus: NVIDIA creates it wherever the CRD exists
        t.write("cluster.prometheusOperator", True)


#: the only global value a chart here reads (the NFD subchart's pull secrets)
_READ_GLOBALS = ("imagePullSecrets",)


def _merge_nfd_values(t: Translation, values: Any) -> None:
    """Merge into the NFD chart's values written so far (the chart default before the first write)."""
    current = get_path(t.document, "nfd.values")
    base = current if isinstance(current, Mapping) else get_path(t.defaults, "nfd.values")
    t.write("nfd.values", merge_over(base, values))


def _nfd_values(t: Translation, path: str, value: Any) -> None:
    if not is_empty(value) and _is_block(t, path, value):
        _merge_nfd_values(t, value)


def _global_values(t: Translation, path: str, value: Any) -> None:
    if not is_empty(value) and _is_block(t, path, value):
        _merge_nfd_values(t, {"global": value})


def _global_note(value: Any) -> str | None:
    unread = sorted(str(key) for key in value if key not in _READ_GLOBALS) if isinstance(value, Mapping) else []
    if not unread:
        return None
    return (
        f"no chart here reads global.{', global.'.join(unread)} (the NFD chart reads only global.imagePullSecrets); "
        "if these are a parent chart's values, import its gpu-operator: subtree alone"
    )


def _is_block(t: Translation, path: str, value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, Mapping):
        t.problem(path, f"must be a mapping, got {described(value)}")
        return False
    return True


def _upgrade_policy(t: Translation, path: str, value: Any) -> None:
    """The chart's `driver.upgradePolicy`, with `gpuPodDeletion` under the ClusterPolicy's name `podDeletion`."""
    if not _is_block(t, path, value):
        return
    policy = {("podDeletion" if key == "gpuPodDeletion" else key): item for key, item in value.items()}
    t.write("operator.driver.upgradePolicy", policy)


def _upgrade_policy_note(value: Any) -> str | None:
    if not value:
        return None
    return ("imported as operator.driver.upgradePolicy, but only the operator controller carries it out, and the "
            "controller runs from the agents image: add agents.image or agents.build to the config, or the driver "
            "DaemonSet keeps updating OnDelete")


UPGRADE_POLICY = Handle(_upgrade_policy, (("operator.driver.upgradePolicy", "driver.upgradePolicy"),),
                        note=_upgrade_policy_note)
DEVICE_PLUGIN_CONFIG = Handle(
    _device_plugin_config,
    (("operator.devicePlugin.config", "devicePlugin.config"), ("configs.devicePlugin", "devicePlugin.config.data")),
)
MIG_MANAGER_CONFIG = Handle(
    _mig_manager_config,
    (
        ("operator.migManager.config", "migManager.config"),
        ("configs.migManager", f"migManager.config.data.{MIG_CONFIG_KEY}"),
    ),
)
DCGM_EXPORTER_CONFIG = Handle(
    _dcgm_exporter_config,
    (("operator.dcgmExporter.config", "dcgmExporter.config"), ("configs.dcgmExporter", "dcgmExporter.config.data")),
)
NRI_PLUGIN = Handle(_nri_plugin, (("operator.cdi.nriPluginEnabled", "cdi.nriPluginEnabled"),))
DEFAULT_RUNTIME = Handle(
    _default_runtime,
    (
        ("cluster.containerRuntime", "operator.defaultRuntime"),
        ("operator.operator.defaultRuntime", "operator.defaultRuntime"),
    ),
    note=_default_runtime_note,
)
SERVICE_MONITOR = Handle(
    _service_monitor, (("operator.dcgmExporter.serviceMonitor", "dcgmExporter.serviceMonitor"),)
)
NFD_VALUES = Handle(_nfd_values, (("nfd.values", "node-feature-discovery"),))
GLOBAL_VALUES = Handle(_global_values, (("nfd.values.global", "global"),), note=_global_note)
