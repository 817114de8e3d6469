"""Rules that span sections of the config document, each a small function that yields Problems.

Field-level rules live on the models; these are the ones a single field cannot see: a ConfigMap named in one
section and filled in another, a MIG strategy inherited by a device-plugin config, features NVIDIA would accept
but this package does not render. Every rule names the key to change. The rules about GPU pools live in
:mod:`gpu_operator.config.pool_checks`, those about drivers of their own in
:mod:`gpu_operator.config.driver_group_checks` and :mod:`gpu_operator.config.driver_compat_checks`, those about
staged driver rollouts in :mod:`gpu_operator.config.driver_rollout_checks`; they run here too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from gpu_operator.config.agents import choose_implementation
from gpu_operator.config.chart_values import DRA_VALUES, NETWORK_VALUES, NFD_VALUES, chart_values_problems
from gpu_operator.config.cluster import PUBLISHED_DRIVER_OS
from gpu_operator.config.clusterpolicy.driver import DriverSpec
from gpu_operator.config.dcgm_metrics import AGENT_READABLE_FIELDS, parse_metrics_csv
from gpu_operator.config.distributions import CERT_CONFIG_DIRS, REPO_CONFIG_DIRS
from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.dra_checks import DRA_CHECKS
from gpu_operator.config.driver_compat_checks import DRIVER_COMPAT_CHECKS
from gpu_operator.config.driver_group_checks import DRIVER_GROUP_CHECKS
from gpu_operator.config.driver_rollout_checks import DRIVER_ROLLOUT_CHECKS
from gpu_operator.config.errors import Problem
from gpu_operator.config.monitoring_checks import MONITORING_CHECKS
from gpu_operator.config.monitoring_inputs import MONITORING_INPUT_CHECKS
from gpu_operator.config.namespace_checks import NAMESPACE_CHECKS
from gpu_operator.config.network_checks import NETWORK_CHECKS
from gpu_operator.config.pool_checks import POOL_CHECKS
from gpu_operator.config.remediation_checks import REMEDIATION_CHECKS

__all__ = ["CHECKS", "semantic_problems"]

Check = Callable[[GpuStackConfig], Iterator[Problem]]

# toolkit env vars NVIDIA reads as host paths (it mounts their parent directories)
_HOST_PATH_ENV = ("CONTAINERD_CONFIG", "CONTAINERD_SOCKET", "RUNTIME_CONFIG", "RUNTIME_DROP_IN_CONFIG", "NRI_SOCKET")
# volume names the device-plugin, MPS and GFD pods already use; the config ConfigMap's volume is named after it
_PLUGIN_POD_VOLUMES = frozenset({
    "config", "device-plugin", "run-nvidia-validations", "driver-install-dir", "host-root", "cdi-root", "mps-root",
    "mps-shm", "run-nvidia", "host-sys", "output-dir", "nvidia-device-plugin-entrypoint",
})
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
#: NVIDIA's driver image, whose tags exist only for PUBLISHED_DRIVER_OS.
_NVIDIA_DRIVER = DriverSpec()
#: ConfigMaps the MIG manager operand creates itself.
_MIG_DEFAULT_CONFIG_MAPS = ("default-mig-parted-config", "default-gpu-clients")


def _configmap_contents_need_a_name(doc: GpuStackConfig) -> Iterator[Problem]:
    named = (
        ("devicePlugin", doc.configs.device_plugin, doc.operator.device_plugin.config.name),
        ("migManager", doc.configs.mig_manager, doc.operator.mig_manager.config.name),
        ("dcgmExporter", doc.configs.dcgm_exporter, doc.operator.dcgm_exporter.config.name),
    )
    for section, contents, name in named:
        if contents is not None and not name:
            yield Problem(
                f"operator.{section}.config.name",
                f"required when configs.{section} is set: it names the ConfigMap to create",
            )


def _device_plugin_default_exists(doc: GpuStackConfig) -> Iterator[Problem]:
    configs, ref = doc.configs.device_plugin, doc.operator.device_plugin.config
    if configs is not None and ref.default and ref.default not in configs:
        yield Problem(
            "operator.devicePlugin.config.default",
            f"{ref.default!r} is not one of configs.devicePlugin ({', '.join(sorted(configs))})",
        )
    if configs is not None and not ref.default and len(configs) > 1:
        yield Problem(
            "operator.devicePlugin.config.default",
            "required when configs.devicePlugin holds several configs: nodes without the "
            "nvidia.com/device-plugin.config label need one",
        )


def _device_plugin_config_name(doc: GpuStackConfig) -> Iterator[Problem]:
    name = doc.operator.device_plugin.config.name
    if name and not _DNS_LABEL.match(name):
        yield Problem("operator.devicePlugin.config.name", f"{name!r} must be a DNS-1123 label (it also names a volume)")
    elif name in _PLUGIN_POD_VOLUMES:
        yield Problem(
            "operator.devicePlugin.config.name", f"{name!r} clashes with a volume of the device-plugin pod; rename it"
        )


def _mps_inherits_mig_strategy(doc: GpuStackConfig) -> Iterator[Problem]:
    for name, config in (doc.configs.device_plugin or {}).items():
        if config.uses_mps and config.flags.mig_strategy is None and doc.operator.mig.strategy == "mixed":
            yield Problem(
                f"configs.devicePlugin.{name}.sharing.mps",
                "MPS cannot be used with the 'mixed' MIG strategy inherited from operator.mig.strategy; "
                "set flags.migStrategy to none or single in this config",
            )


def _mig_default_config_exists(doc: GpuStackConfig) -> Iterator[Problem]:
    custom, default = doc.configs.mig_manager, doc.operator.mig_manager.config.default
    if custom is not None and default and default not in custom.mig_configs:
        yield Problem(
            "configs.migManager.mig-configs",
            f"must define {default!r}: nodes are labelled nvidia.com/mig.config={default} until you choose another",
        )


def _mig_config_name_is_free(doc: GpuStackConfig) -> Iterator[Problem]:
    ref = doc.operator.mig_manager
    for path, name in (("config.name", ref.config.name), ("gpuClientsConfig.name", ref.gpu_clients_config.name)):
        if name in _MIG_DEFAULT_CONFIG_MAPS:
            yield Problem(
                f"operator.migManager.{path}",
                f"{name!r} is the ConfigMap the MIG manager operand creates; name your own ConfigMap differently",
            )


def _nri_needs_cdi_and_toolkit(doc: GpuStackConfig) -> Iterator[Problem]:
    cdi, toolkit = doc.operator.cdi, doc.operator.toolkit
    if cdi.nri_plugin_enabled and not (cdi.enabled and toolkit.enabled):
        yield Problem("operator.cdi.nriPluginEnabled", "the NRI plugin needs cdi.enabled and toolkit.enabled")


def _default_runtime_is_the_clusters(doc: GpuStackConfig) -> Iterator[Problem]:
    """`operator.defaultRuntime` (NVIDIA's fallback when it cannot detect the runtime) must not contradict the
    runtime the operands are rendered for, or the document would say one runtime and deploy another."""
    declared, rendered = doc.operator.operator.default_runtime, doc.cluster.container_runtime
    if declared is not None and declared != rendered:
        yield Problem(
            "operator.operator.defaultRuntime",
            f"{declared!r} contradicts cluster.containerRuntime {rendered!r}, the runtime the operands are rendered "
            f"for; set cluster.containerRuntime: {declared} if the GPU nodes run it, or remove defaultRuntime",
        )


def _unsupported_modes(doc: GpuStackConfig) -> Iterator[Problem]:
    spec = doc.operator
    if spec.operator.use_ocp_driver_toolkit:
        yield Problem("operator.operator.use_ocp_driver_toolkit", "OpenShift Driver Toolkit is not supported; set false")
    if spec.kata_manager.enabled:
        yield Problem(
            "operator.kataManager.enabled",
            "the Kata manager is never deployed since GPU Operator v26; set false and use sandboxWorkloads.mode: kata",
        )


def _driver_image_is_published(doc: GpuStackConfig) -> Iterator[Problem]:
    """NVIDIA publishes driver images for a few OSes only; on others, its repository has no image to pull."""
    driver = doc.operator.driver
    if not driver.enabled or (driver.repository, driver.image) != (_NVIDIA_DRIVER.repository, _NVIDIA_DRIVER.image):
        return
    for index, os in enumerate(doc.cluster.operating_systems):
        if os.id not in PUBLISHED_DRIVER_OS:
            yield Problem(
                f"cluster.operatingSystems[{index}].id",
                f"NVIDIA publishes no driver image for {os.id} ({driver.repository}/{driver.image} has tags for "
                f"{', '.join(PUBLISHED_DRIVER_OS)} only): build one with NVIDIA's gpu-driver-container and set "
                "operator.driver.repository and operator.driver.version to it, or set operator.driver.enabled: "
                "false where the host brings its driver",
            )


def _precompiled_needs_kernels(doc: GpuStackConfig) -> Iterator[Problem]:
    if not (doc.operator.driver.enabled and doc.operator.driver.use_precompiled):
        return
    for index, os in enumerate(doc.cluster.operating_systems):
        if not os.kernel_versions:
            yield Problem(
                f"cluster.operatingSystems[{index}].kernelVersions",
                f"precompiled drivers need the kernel versions of the {os.tag} nodes (one DaemonSet per kernel)",
            )


def _precompiled_driver_rules(doc: GpuStackConfig) -> Iterator[Problem]:
    spec = doc.operator
    if not (spec.driver.enabled and spec.driver.use_precompiled):
        return
    if spec.driver.version.startswith("sha256:"):
        yield Problem("operator.driver.version", "precompiled images are tagged per kernel: use a driver branch tag")
    for section, sidecar in (("gds", spec.gds), ("gdrcopy", spec.gdrcopy)):
        if sidecar.enabled:
            yield Problem(f"operator.{section}.enabled", "not supported with precompiled drivers (driver.usePrecompiled)")
    owners: dict[str, str] = {}
    for index, os in enumerate(doc.cluster.operating_systems):
        for kernel in os.kernel_versions:
            if kernel in owners:
                yield Problem(
                    f"cluster.operatingSystems[{index}].kernelVersions",
                    f"kernel {kernel} is already listed for {owners[kernel]}; a kernel belongs to one OS image",
                )
            owners.setdefault(kernel, os.tag)


def _compiles_somewhere(doc: GpuStackConfig) -> bool:
    """A driver DaemonSet installs packages: the driver is not precompiled, or unlisted kernels compile."""
    driver = doc.operator.driver
    return driver.enabled and (not driver.use_precompiled or doc.cluster.unlisted_kernels == "compile")


def _driver_files_are_known(doc: GpuStackConfig) -> Iterator[Problem]:
    """NVIDIA mounts each key of the repoConfig/certConfig ConfigMap as its own file (`subPath`), keeping the
    image's other repository files and CA bundle; a render cannot list the keys, so the config must."""
    driver = doc.operator.driver
    settings = (
        ("repoConfig.configMapName", driver.repo_config.config_map_name, "driverRepoConfig",
         doc.configs.driver_repo_config),
        ("certConfig.name", driver.cert_config.name, "driverCertConfig", doc.configs.driver_cert_config),
    )
    for path, name, section, files in settings:
        if name and files is None and _compiles_somewhere(doc):
            yield Problem(
                f"operator.driver.{path}",
                f"the driver mounts each key of ConfigMap {name!r} as a file of its own, beside the image's files, "
                f"and a render cannot read the ConfigMap: give its files in configs.{section} ({{file: contents}}, "
                f"created here) or its key names ([file, ...]) if it exists already",
            )
        elif files is not None and not name:
            yield Problem(f"configs.{section}", f"set operator.driver.{path}: it names the ConfigMap of these files")
        elif files is not None and not _compiles_somewhere(doc):
            yield Problem(
                f"configs.{section}",
                "not used: only a driver that installs packages mounts it (driver.enabled, and not precompiled "
                "unless cluster.unlistedKernels is compile); remove it",
            )


def _driver_customisation_fits_the_os(doc: GpuStackConfig) -> Iterator[Problem]:
    driver = doc.operator.driver
    if not _compiles_somewhere(doc):
        return
    settings = (
        ("repoConfig.configMapName", driver.repo_config.config_map_name, REPO_CONFIG_DIRS),
        ("certConfig.name", driver.cert_config.name, CERT_CONFIG_DIRS),
    )
    for path, value, table in settings:
        unsupported = sorted({os.id for os in doc.cluster.operating_systems if os.id not in table})
        if value and unsupported:
            yield Problem(
                f"operator.driver.{path}",
                f"not supported on {', '.join(unsupported)} (supported: {', '.join(sorted(table))})",
            )


def _driver_probes_and_env(doc: GpuStackConfig) -> Iterator[Problem]:
    driver = doc.operator.driver
    for name, probe in (("startupProbe", driver.startup_probe), ("livenessProbe", driver.liveness_probe)):
        if probe is not None and probe.success_threshold not in (None, 1):
            yield Problem(f"operator.driver.{name}.successThreshold", "must be 1 for startup and liveness probes")
    for index, var in enumerate(driver.env):
        if var.name == "DRIVER_CONFIG_DIGEST":
            yield Problem(
                f"operator.driver.env[{index}].name",
                "DRIVER_CONFIG_DIGEST is computed from the driver pod spec; remove it",
            )


def _vgpu_manager_needs_an_image(doc: GpuStackConfig) -> Iterator[Problem]:
    spec = doc.operator
    vgpu = spec.vgpu_manager
    full_reference = "/" in vgpu.image and not (vgpu.repository or vgpu.version)
    if spec.sandbox_workloads.enabled and vgpu.enabled and not (vgpu.repository and vgpu.version or full_reference):
        yield Problem(
            "operator.vgpuManager",
            "the vGPU manager image is built by you from NVIDIA's vGPU package: set repository and version "
            "(or image to a full reference)",
        )


def _toolkit_host_paths(doc: GpuStackConfig) -> Iterator[Problem]:
    for index, var in enumerate(doc.operator.toolkit.env):
        if var.name in _HOST_PATH_ENV and var.value is not None and not var.value.startswith("/"):
            yield Problem(f"operator.toolkit.env[{index}].value", f"{var.name} must be an absolute host path")


def _service_monitor_needs_prometheus_operator(doc: GpuStackConfig) -> Iterator[Problem]:
    """NVIDIA creates the ServiceMonitor only where its CRD exists; a render cannot look, so asking for one where
    `cluster.prometheusOperator` is false is an error rather than a ServiceMonitor silently dropped. Asking means
    `enabled: true`; left unset (the chart's "where the CRD exists"), `cluster.prometheusOperator` decides."""
    exporter = doc.operator.dcgm_exporter
    if exporter.enabled and exporter.service_monitor.enabled and not doc.cluster.prometheus_operator:
        yield Problem(
            "operator.dcgmExporter.serviceMonitor.enabled",
            "a ServiceMonitor needs the Prometheus Operator's CRDs (monitoring.coreos.com) and "
            "cluster.prometheusOperator is false: set cluster.prometheusOperator: true where they are installed "
            "(e.g. kube-prometheus-stack), or leave serviceMonitor.enabled unset or false",
        )


def _metrics_our_exporter_reads(doc: GpuStackConfig) -> Iterator[Problem]:
    """Our exporter would silently publish nothing for a field it cannot read: refuse it, naming the way out."""
    csv_text = doc.configs.dcgm_exporter
    if csv_text is None or choose_implementation(doc.agents, "dcgmExporter").implementation != "agents":
        return
    unreadable = [m.field for m in parse_metrics_csv(csv_text)
                  if m.kind != "label" and m.field not in AGENT_READABLE_FIELDS]
    if unreadable:
        yield Problem(
            "configs.dcgmExporter",
            f"our metrics exporter cannot read {', '.join(unreadable)}: remove "
            f"{'them' if len(unreadable) > 1 else 'it'}, or run NVIDIA's dcgm-exporter "
            "(agents.overrides: {dcgmExporter: nvidia}), which reads every DCGM field",
        )


def _hpc_job_mapping_directory(doc: GpuStackConfig) -> Iterator[Problem]:
    mapping = doc.operator.dcgm_exporter.hpc_job_mapping
    if mapping is not None and mapping.enabled and not mapping.directory.startswith("/"):
        yield Problem(
            "operator.dcgmExporter.hpcJobMapping.directory",
            "set the absolute host directory where the workload manager writes job files",
        )


def _controller_needs_the_agents_image(doc: GpuStackConfig) -> Iterator[Problem]:
    if doc.controller.enabled and doc.agents.image_source is None:
        yield Problem("controller.enabled", "the operator controller runs from the agents image: set agents.image "
                      "(an image you pushed) or agents.build, or set controller.enabled to false")
    if doc.controller.wait_for_driver_rollout and not doc.controller_enabled:
        yield Problem("controller.waitForDriverRollout", "only the operator controller rolls a new driver out: "
                      "enable it (it needs agents.image or agents.build) or remove waitForDriverRollout")


def _chart_values_are_typed(doc: GpuStackConfig) -> Iterator[Problem]:
    """The chart values the stack merges into have the chart's shapes (:mod:`gpu_operator.config.chart_values`)."""
    yield from chart_values_problems(doc.nfd.values, NFD_VALUES)
    yield from chart_values_problems(doc.network.values, NETWORK_VALUES)
    yield from chart_values_problems(doc.dra.values, DRA_VALUES)


CHECKS: tuple[Check, ...] = (
    _chart_values_are_typed,
    *NAMESPACE_CHECKS,
    _controller_needs_the_agents_image,
    _configmap_contents_need_a_name,
    _device_plugin_default_exists,
    _device_plugin_config_name,
    _mps_inherits_mig_strategy,
    _mig_default_config_exists,
    _mig_config_name_is_free,
    _nri_needs_cdi_and_toolkit,
    _default_runtime_is_the_clusters,
    _unsupported_modes,
    _driver_image_is_published,
    _precompiled_needs_kernels,
    _precompiled_driver_rules,
    _driver_files_are_known,
    _driver_customisation_fits_the_os,
    _driver_probes_and_env,
    _vgpu_manager_needs_an_image,
    _toolkit_host_paths,
    _service_monitor_needs_prometheus_operator,
    _hpc_job_mapping_directory,
    _metrics_our_exporter_reads,
    *POOL_CHECKS,
    *DRIVER_GROUP_CHECKS,
    *DRIVER_COMPAT_CHECKS,
    *DRIVER_ROLLOUT_CHECKS,
    *NETWORK_CHECKS,
    *MONITORING_CHECKS,
    *MONITORING_INPUT_CHECKS,
    *DRA_CHECKS,
    *REMEDIATION_CHECKS,
)


def semantic_problems(doc: GpuStackConfig) -> list[Problem]:
    """Every cross-section problem in a document that already passed field validation."""
    return [problem for check in CHECKS for problem in check(doc)]
