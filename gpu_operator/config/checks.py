"""Rules that span sections of the config document, each a small function that yields Problems.

Field-level rules live on the models; these are the ones a single field cannot see: a ConfigMap named in one
section and filled in another, a MIG strategy inherited by a device-plugin config, features NVIDIA would accept
but this package does not render. Every rule names the key to change.
"""

from __future__ import annotations

from typing import Callable, Iterator

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.errors import Problem

__all__ = ["CHECKS", "semantic_problems"]

Check = Callable[[GpuStackConfig], Iterator[Problem]]

# toolkit env vars NVIDIA reads as host paths (it mounts their parent directories)
_HOST_PATH_ENV = ("CONTAINERD_CONFIG", "CONTAINERD_SOCKET", "RUNTIME_CONFIG", "RUNTIME_DROP_IN_CONFIG", "NRI_SOCKET")


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


def _nri_needs_cdi_and_toolkit(doc: GpuStackConfig) -> Iterator[Problem]:
    cdi, toolkit = doc.operator.cdi, doc.operator.toolkit
    if cdi.nri_plugin_enabled and not (cdi.enabled and toolkit.enabled):
        yield Problem("operator.cdi.nriPluginEnabled", "the NRI plugin needs cdi.enabled and toolkit.enabled")


def _unsupported_modes(doc: GpuStackConfig) -> Iterator[Problem]:
    spec = doc.operator
    if spec.driver.use_nvidia_driver_crd:
        yield Problem(
            "operator.driver.useNvidiaDriverCRD",
            "NVIDIADriver custom resources are not rendered by this package; set false and configure the driver here",
        )
    if spec.operator.use_ocp_driver_toolkit:
        yield Problem("operator.operator.use_ocp_driver_toolkit", "OpenShift Driver Toolkit is not supported; set false")
    if spec.kata_manager.enabled:
        yield Problem(
            "operator.kataManager.enabled",
            "the Kata manager is never deployed since GPU Operator v26; set false and use sandboxWorkloads.mode: kata",
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


def _vgpu_manager_needs_an_image(doc: GpuStackConfig) -> Iterator[Problem]:
    spec = doc.operator
    vgpu = spec.vgpu_manager
    if spec.sandbox_workloads.enabled and vgpu.enabled and not (vgpu.repository and vgpu.version):
        yield Problem(
            "operator.vgpuManager",
            "the vGPU manager image is built by you from NVIDIA's vGPU package: set repository and version",
        )


def _toolkit_host_paths(doc: GpuStackConfig) -> Iterator[Problem]:
    for index, var in enumerate(doc.operator.toolkit.env):
        if var.name in _HOST_PATH_ENV and var.value is not None and not var.value.startswith("/"):
            yield Problem(f"operator.toolkit.env[{index}].value", f"{var.name} must be an absolute host path")


def _hpc_job_mapping_directory(doc: GpuStackConfig) -> Iterator[Problem]:
    mapping = doc.operator.dcgm_exporter.hpc_job_mapping
    if mapping is not None and mapping.enabled and not mapping.directory.startswith("/"):
        yield Problem(
            "operator.dcgmExporter.hpcJobMapping.directory",
            "set the absolute host directory where the workload manager writes job files",
        )


CHECKS: tuple[Check, ...] = (
    _configmap_contents_need_a_name,
    _device_plugin_default_exists,
    _mps_inherits_mig_strategy,
    _mig_default_config_exists,
    _nri_needs_cdi_and_toolkit,
    _unsupported_modes,
    _precompiled_needs_kernels,
    _vgpu_manager_needs_an_image,
    _toolkit_host_paths,
    _hpc_job_mapping_directory,
)


def semantic_problems(doc: GpuStackConfig) -> list[Problem]:
    """Every cross-section problem in a document that already passed field validation."""
    return [problem for check in CHECKS for problem in check(doc)]
