"""Rules about GPU pools that need more than the pool itself: the cluster, the catalog, the operator sections.

Each rule yields Problems naming the key to change. They run with the document's other cross-section rules
(:mod:`gpu_operator.config.checks`), before anything is rendered or registered.

A pool's MIG layout is checked against its GPU as the driver will: the names of the profiles a custom layout asks
for (those the GPU offers, from the MIG catalog), the count of each GPU instance profile (at most as many as fit
one GPU), and the compute slices of all of them together (at most the GPU's). Compute-instance profiles
(`1c.3g.40gb`) share one GPU instance (mig-parted reconfigure `SetMigConfig` reuses it), so only their GPU instance
profile's name is checked. The syntax of a profile name is checked already where
the layout is read (:mod:`gpu_operator.mig.parted`); NVIDIA's default config fits every GPU by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from gpu_operator.aks.node_images import KUBERNETES_VERSION
from gpu_operator.aks.vm_sizes import VM_SIZES, Gpu
from gpu_operator.config.aks import SystemPool
from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.effective import pool_operating_system
from gpu_operator.config.errors import Problem
from gpu_operator.config.pools import MAX_TAGS
from gpu_operator.config.suggestions import did_you_mean
from gpu_operator.mig.catalog import MigGeometry
from gpu_operator.mig.default_config import default_config
from gpu_operator.mig.matching import layouts_for
from gpu_operator.mig.parted import MIG_PROFILE_PATTERN

__all__ = ["POOL_CHECKS", "mig_config_profiles"]

Check = Callable[[GpuStackConfig], Iterator[Problem]]

#: The ConfigMap name under which the MIG manager operand ships the default mig-parted config.
_DEFAULT_MIG_CONFIG_MAP = "default-mig-parted-config"


def _pools_need_an_aks_cluster(doc: GpuStackConfig) -> Iterator[Problem]:
    if doc.pools and doc.aks is None:
        yield Problem("aks", "pools are AKS agent pools: set aks.resourceGroup and aks.clusterName of their cluster")


def _pool_names_are_unique(doc: GpuStackConfig) -> Iterator[Problem]:
    system = doc.aks.system_pool.name if doc.aks is not None and doc.aks.create else None
    seen: set[str] = set()
    for index, pool in enumerate(doc.pools):
        if pool.name in seen:
            yield Problem(f"pools[{index}].name", f"pool {pool.name!r} is defined twice")
        elif pool.name == system:
            yield Problem(f"pools[{index}].name", f"{pool.name!r} is the system pool's name (aks.systemPool.name)")
        seen.add(pool.name)


def _pool_vm_size_is_known(doc: GpuStackConfig) -> Iterator[Problem]:
    for index, pool in enumerate(doc.pools):
        if pool.hardware is None:
            hint = did_you_mean(pool.vm_size, VM_SIZES, prefixes=("Standard_",))
            sentence = f"{pool.vm_size!r} is not in the GPU VM size catalog" + (f": {hint}" if hint else "")
            yield Problem(
                f"pools[{index}].vmSize",
                f"{sentence}{'' if sentence.endswith('?') else '.'} For a GPU size the catalog lacks, declare its "
                f"GPUs under pools[{index}].gpu (model, count, memoryGiB, and infiniband if it has IB NICs)",
            )


def _pool_count_fits_autoscale(doc: GpuStackConfig) -> Iterator[Problem]:
    for index, pool in enumerate(doc.pools):
        scale = pool.autoscale
        if scale is not None and pool.count is not None and not scale.min_count <= pool.count <= scale.max_count:
            yield Problem(
                f"pools[{index}].count",
                f"{pool.count} is outside autoscale's range {scale.min_count}..{scale.max_count}",
            )


def _aks_managed_driver_excludes_operator_driver(doc: GpuStackConfig) -> Iterator[Problem]:
    names = ", ".join(pool.name for pool in doc.pools if pool.gpu_driver == "aks")
    if not names:
        return
    for section, spec in (("driver", doc.operator.driver), ("toolkit", doc.operator.toolkit)):
        if spec.enabled:
            yield Problem(
                f"operator.{section}.enabled",
                f"must be false while pools use the AKS-managed driver (gpuDriver: aks: {names}): the operator's "
                f"{section} over AKS's driver and runtime setup breaks the node, and uninstalling does not undo it",
            )


def _version_parts(version: str) -> tuple[int, int | None]:
    """(minor, patch) of `1.<minor>[.<patch>]`; the patch is None where only the minor is given."""
    match = KUBERNETES_VERSION.fullmatch(version)
    if match is None:  # the models refuse other forms already
        return 0, None
    return int(match.group(1)), int(match.group(2)[1:]) if match.group(2) else None


def _is_newer(version: str, than: str) -> bool:
    """Whether `version` is newer than `than`; `1.34` (a minor's newest patch) is not newer than `1.34.2`."""
    (minor, patch), (other_minor, other_patch) = _version_parts(version), _version_parts(than)
    if minor != other_minor:
        return minor > other_minor
    return patch is not None and other_patch is not None and patch > other_patch


def _pool_not_newer_than_its_cluster(doc: GpuStackConfig) -> Iterator[Problem]:
    """AKS upgrades the control plane first and refuses a node pool newer than it (a kubelet may not be newer than
    its API server, Kubernetes' version skew policy)."""
    cluster = doc.aks.kubernetes_version if doc.aks is not None else None
    if cluster is None:
        return
    for index, pool in enumerate(doc.pools):
        version = pool.orchestrator_version
        if version is not None and _is_newer(version, cluster):
            yield Problem(f"pools[{index}].orchestratorVersion",
                          f"{version} is newer than the cluster's control plane (aks.kubernetesVersion {cluster}), "
                          f"which AKS refuses: upgrade aks.kubernetesVersion to {version} first, or give the pool "
                          f"{cluster} or older")


def _pool_tags_fit_azures_limit(doc: GpuStackConfig) -> Iterator[Problem]:
    """A pool carries the cluster's tags and its own; together they are one resource's tags."""
    cluster = doc.aks.tags if doc.aks is not None else {}
    for index, pool in enumerate(doc.pools):
        count = len({**cluster, **pool.tags})
        if count > MAX_TAGS:
            yield Problem(f"pools[{index}].tags", f"with aks.tags the pool carries {count} tags; an Azure resource "
                                                  f"takes at most {MAX_TAGS}: drop some here or in aks.tags")


def _pool_os_is_known(doc: GpuStackConfig) -> Iterator[Problem]:
    for index, pool in enumerate(doc.pools):
        if pool_operating_system(pool, doc.aks) is None:
            yield Problem(
                f"pools[{index}].osSKU",
                "with osSKU Ubuntu the Ubuntu release follows the Kubernetes version: set aks.kubernetesVersion "
                "(or this pool's orchestratorVersion), or choose osSKU Ubuntu2204",
            )


def mig_config_profiles(doc: GpuStackConfig, gpu: Gpu) -> Mapping[str, frozenset[str]] | None:
    """Named MIG configs usable on this GPU and the profiles each creates; None when they cannot be known
    (a ConfigMap that exists outside this config, or a GPU the MIG catalog does not know)."""
    reference = doc.operator.mig_manager.config.name
    custom = doc.configs.mig_manager
    if reference and reference != _DEFAULT_MIG_CONFIG_MAP:
        if custom is None:
            return None
        configs = {
            name: [layout.model_dump(by_alias=True, exclude_none=True) for layout in layouts]
            for name, layouts in custom.mig_configs.items()
        }
    else:
        model = gpu.mig_model
        if model is None:
            return None
        configs = default_config([model], legacy={})["mig-configs"]
    pci_id = gpu.mig_model.pci_id if gpu.mig_model is not None else ""
    return {
        name: frozenset(
            profile
            for layout in layouts_for(layouts, pci_id)
            for profile, count in layout.get("mig-devices", {}).items()
            if count > 0
        )
        for name, layouts in configs.items()
    }


def _custom_layouts(doc: GpuStackConfig, name: str, pci_id: str) -> list[Mapping[str, int]]:
    """The `mig-devices` of the custom config `name` that apply to the GPU (empty for NVIDIA's default config)."""
    custom = doc.configs.mig_manager
    reference = doc.operator.mig_manager.config.name
    if custom is None or not reference or reference == _DEFAULT_MIG_CONFIG_MAP or name not in custom.mig_configs:
        return []
    layouts = [layout.model_dump(by_alias=True, exclude_none=True) for layout in custom.mig_configs[name]]
    return [layout.get("mig-devices", {}) for layout in layouts_for(layouts, pci_id)]


def _slices(profile: str) -> int:
    """The compute slices of a GPU instance profile (`3g.40gb` → 3)."""
    return int(profile.split("g.", 1)[0])


def _layout_fit_problem(geometry: MigGeometry, model: str, devices: Mapping[str, int]) -> str | None:
    """What of one layout the GPU cannot create: an unknown profile, too many of one, too many slices."""
    offered = geometry.profiles
    total = max(_slices(profile) for profile in offered)
    used = 0
    for profile, count in devices.items():
        compute = MIG_PROFILE_PATTERN.match(profile)
        instance = profile.split(".", 1)[1] if compute is not None and compute.group(1) else profile
        if instance not in offered:
            return (f"{profile!r} is not a MIG profile of {model}: it offers {', '.join(offered)} (nvidia-smi mig "
                    "-lgip lists them on a node)")
        if instance != profile:
            continue  # compute instances share a GPU instance (mig-parted reuses it), so their count is no GI count
        if count > offered[instance]:
            return f"{count} × {profile} do not fit one {model}: it holds at most {offered[instance]}"
        used += _slices(profile) * count
    if used > total:
        return (f"the layout's GPU instances take {used} compute slices and one {model} has {total}: fewer or smaller "
                "MIG devices per GPU")
    return None


def _mig_config_problem(doc: GpuStackConfig, gpu: Gpu, name: str) -> str | None:
    if not gpu.mig_capable:
        return f"{gpu.model} GPUs do not support MIG; remove migConfig or choose a MIG-capable VM size"
    if not doc.operator.mig_manager.enabled:
        return "needs operator.migManager.enabled: the MIG manager applies the layout"
    configs = mig_config_profiles(doc, gpu)
    if configs is None:
        return None
    if name not in configs:
        return f"{name!r} is not a MIG config for {gpu.model}; choose one of: {', '.join(configs)}"
    model = gpu.mig_model
    for devices in _custom_layouts(doc, name, model.pci_id) if model is not None else ():
        fit = _layout_fit_problem(model.geometry, gpu.model, devices)
        if fit is not None:
            return f"{name!r}: {fit}"
    profiles, strategy = configs[name], doc.operator.mig.strategy
    if profiles and strategy == "none":
        return "operator.mig.strategy is none, so the device plugin would not advertise MIG devices"
    if len(profiles) > 1 and strategy != "mixed":
        return f"{name!r} creates several MIG profiles ({', '.join(sorted(profiles))}); needs operator.mig.strategy mixed"
    return None


def _pool_mig_config(doc: GpuStackConfig) -> Iterator[Problem]:
    for index, pool in enumerate(doc.pools):
        hardware = pool.hardware
        if pool.mig_config is None or hardware is None:
            continue
        message = _mig_config_problem(doc, hardware.gpu, pool.mig_config)
        if message is not None:
            yield Problem(f"pools[{index}].migConfig", message)


def _pool_device_plugin_config_exists(doc: GpuStackConfig) -> Iterator[Problem]:
    plugin = doc.operator.device_plugin
    configs = doc.configs.device_plugin
    for index, pool in enumerate(doc.pools):
        name, path = pool.device_plugin_config, f"pools[{index}].devicePluginConfig"
        if name is None:
            continue
        if not plugin.enabled or not plugin.config.name:
            yield Problem(path, "needs operator.devicePlugin.enabled and operator.devicePlugin.config.name")
        elif configs is not None and name not in configs:
            yield Problem(path, f"{name!r} is not one of configs.devicePlugin ({', '.join(sorted(configs))})")


def _pool_workload_needs_sandbox(doc: GpuStackConfig) -> Iterator[Problem]:
    for index, pool in enumerate(doc.pools):
        if pool.workload != "container" and not doc.operator.sandbox_workloads.enabled:
            yield Problem(
                f"pools[{index}].workload",
                f"{pool.workload} needs operator.sandboxWorkloads.enabled; without it every GPU node runs containers",
            )


def _aks_cluster_settings(doc: GpuStackConfig) -> Iterator[Problem]:
    aks = doc.aks
    if aks is None:
        return
    if aks.create and not aks.location:
        yield Problem("aks.location", "required with aks.create: the Azure region of the new cluster")
    if not aks.create and aks.system_pool != SystemPool():
        yield Problem("aks.systemPool", "only used with aks.create: an existing cluster keeps its system pool")


POOL_CHECKS: tuple[Check, ...] = (
    _pools_need_an_aks_cluster,
    _pool_names_are_unique,
    _pool_vm_size_is_known,
    _pool_count_fits_autoscale,
    _pool_not_newer_than_its_cluster,
    _pool_tags_fit_azures_limit,
    _aks_managed_driver_excludes_operator_driver,
    _pool_os_is_known,
    _pool_mig_config,
    _pool_device_plugin_config_exists,
    _pool_workload_needs_sandbox,
    _aks_cluster_settings,
)
