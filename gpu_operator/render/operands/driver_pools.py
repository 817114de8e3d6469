"""Driver pools: which driver DaemonSets a cluster needs, and which image each one runs.

A driver image is built for one OS (its tag ends in `-<osTag>`, e.g. `595.91.07-ubuntu22.04`), and a precompiled
one for one kernel as well (`595.91.07-5.15.0-1074-azure-ubuntu22.04`). NVIDIA's ClusterPolicy controller
renders one `nvidia-driver-daemonset` for the OS of the first GPU node it finds, or, with precompiled drivers,
one `nvidia-driver-daemonset-<kernel>-<os>` per kernel, selected by NFD's `kernel-version.full` label. We know
the node OSes from config, so each OS gets its pool: a single OS keeps NVIDIA's single DaemonSet, several OSes
get `<name>-<osTag>` each, pinned with NFD's `system-os_release` labels the way NVIDIA's NVIDIADriver
controller pins its OS pools (by `VERSION_ID.major` when the tag drops the minor version, as for rhel9).

NVIDIA finds the kernels on the GPU nodes at every reconcile, so a node that boots a new kernel (an AKS
node-image upgrade) gets its precompiled DaemonSet. We render the kernels the config lists; a node with another
kernel would get no driver at all, so with `cluster.unlistedKernels: compile` (the default) each OS also gets
its regular, compiling pool, kept off the listed kernels by a `NotIn` node affinity on the kernel label (a node
NFD has not labelled counts as unlisted). `none` leaves such nodes without a driver, as chosen.

A driver of its own (an NVIDIADriver, :mod:`gpu_operator.config.driver_groups`) gets its pools the way NVIDIA's
NVIDIADriver controller partitions its nodes (`internal/state/nodepool.go` `getNodePools`): one per OS, or per
(OS, kernel) when precompiled, each selected by the NVIDIADriver's `nodeSelector`, `nvidia.com/gpu.present=true`,
the owner label `nvidia.com/gpu-operator.driver.owner=<name>` and the NFD OS (and kernel) labels, and named as
NVIDIA names them (:mod:`.nvidia_driver_names`). Its OSes are those of its pools; a driver that selects nodes
outside them (a node selector, the default) gets every OS of `cluster.operatingSystems`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any
from collections.abc import Iterable

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.cluster import NodeOperatingSystem
from gpu_operator.config.clusterpolicy.common import ImageFields
from gpu_operator.config.clusterpolicy.driver import DriverSpec
from gpu_operator.config.driver_groups import DriverGroup
from gpu_operator.config.effective import pool_operating_system
from gpu_operator.config.node_metadata import DRIVER_OWNER_LABEL, GPU_PRESENT_LABEL
from gpu_operator.config.nvidia_driver import NvidiaDriverSpec
from gpu_operator.facts.kube_names import is_dns_subdomain, is_label_value
from gpu_operator.render.images import image_path
from gpu_operator.render.operands.nvidia_driver_names import driver_app_name, stand_in_uid

__all__ = [
    "DriverPool",
    "driver_pools",
    "group_driver_pools",
    "group_operating_systems",
    "sanitized_kernel",
    "os_selector",
    "with_os_tag",
    "driver_image",
    "os_image",
    "NFD_OS_ID",
    "NFD_OS_VERSION",
    "NFD_OS_MAJOR",
    "NFD_KERNEL",
    "kernel_exclusion",
]

Object = dict[str, Any]

NFD_OS_ID = "feature.node.kubernetes.io/system-os_release.ID"
NFD_OS_VERSION = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
NFD_OS_MAJOR = "feature.node.kubernetes.io/system-os_release.VERSION_ID.major"
NFD_KERNEL = "feature.node.kubernetes.io/kernel-version.full"

_ARCH = re.compile(r"x86_64(?:_64k)?|aarch64(?:_64k)?")


@dataclass(frozen=True)
class DriverPool:
    """The nodes one driver DaemonSet serves: one OS, and one kernel with precompiled drivers."""

    name: str
    os: NodeOperatingSystem
    kernel: str | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    #: kernels this (compiling) pool stays off because precompiled pools serve them
    excluded_kernels: tuple[str, ...] = ()

    @property
    def precompiled(self) -> bool:
        return self.kernel is not None


def sanitized_kernel(kernel: str) -> str:
    """NVIDIA's kernel-version form for object names: no arch suffix, '_' → '.', no trailing '.', lower case."""
    version = _ARCH.sub("", kernel).replace("_", ".")
    return version.removesuffix(".").lower()


def os_selector(os: NodeOperatingSystem) -> dict[str, str]:
    """NFD labels of one OS; a tag without the minor version (rhel9) matches every minor release."""
    if os.tag == f"{os.id}{os.version_id}":
        return {NFD_OS_ID: os.id, NFD_OS_VERSION: os.version_id}
    return {NFD_OS_ID: os.id, NFD_OS_MAJOR: os.version_id.split(".")[0]}


def _precompiled_pools(base_name: str, systems: Iterable[NodeOperatingSystem]) -> list[DriverPool]:
    pools: list[DriverPool] = []
    for os in systems:
        for kernel in os.kernel_versions:
            pools.append(DriverPool(f"{base_name}-{sanitized_kernel(kernel)}-{os.tag}", os, kernel, {NFD_KERNEL: kernel}))
    return pools


def _os_pools(base_name: str, systems: tuple[NodeOperatingSystem, ...]) -> list[DriverPool]:
    if len(systems) == 1:
        return [DriverPool(base_name, systems[0])]
    return [DriverPool(f"{base_name}-{os.tag}", os, None, os_selector(os)) for os in systems]


def _check(pool: DriverPool) -> DriverPool:
    if not is_dns_subdomain(pool.name):
        raise ValueError(f"driver DaemonSet name {pool.name!r} is not a DNS-1123 subdomain; check the OS and kernel")
    for key, value in pool.node_selector.items():
        if not is_label_value(value):
            raise ValueError(f"{value!r} cannot be matched as the node label {key}")
    return pool


def driver_pools(
    base_name: str,
    systems: tuple[NodeOperatingSystem, ...],
    precompiled: bool,
    *,
    compile_unlisted: bool = False,
) -> list[DriverPool]:
    """The pools in config order: per OS (one OS: NVIDIA's single pool), or per (OS, kernel) when precompiled,
    then, with `compile_unlisted`, per OS again for the nodes whose kernel no precompiled pool serves."""
    if not precompiled:
        pools = _os_pools(base_name, systems)
    else:
        pools = _precompiled_pools(base_name, systems)
        if compile_unlisted:
            pools += [replace(pool, excluded_kernels=pool.os.kernel_versions) for pool in _os_pools(base_name, systems)]
    return [_check(pool) for pool in pools]


def group_operating_systems(config: GpuStackConfig, group: DriverGroup) -> tuple[NodeOperatingSystem, ...]:
    """The OSes a driver of its own runs on: its pools' node images, or every OS when it serves other nodes too."""
    systems = config.cluster.operating_systems
    if group.node_selector or group.default or not group.pools:
        return systems
    tags = {image.tag for image in (pool_operating_system(pool, config.aks) for pool in group.pools) if image}
    return tuple(os for os in systems if os.tag in tags)


def group_driver_pools(
    config: GpuStackConfig, group: DriverGroup, spec: NvidiaDriverSpec
) -> list[DriverPool]:
    """The node pools of an NVIDIADriver, each named and selected as NVIDIA's controller does; with precompiled
    drivers and `cluster.unlistedKernels: compile`, each OS also gets its compiling pool off the listed kernels."""
    uid = spec.uid or stand_in_uid(group.name)
    base = {**spec.node_selector, GPU_PRESENT_LABEL: "true", DRIVER_OWNER_LABEL: group.name}
    pools: list[DriverPool] = []
    for os in group_operating_systems(config, group):
        selector = {**base, **os_selector(os)}
        compiling = DriverPool(driver_app_name(spec.driver_type, os.tag, uid), os, None, selector)
        if not spec.use_precompiled:
            pools.append(compiling)
            continue
        for kernel in os.kernel_versions:
            name = driver_app_name(spec.driver_type, os.tag, uid, kernel)
            pools.append(DriverPool(name, os, kernel, {**selector, NFD_KERNEL: kernel}))
        if config.cluster.unlisted_kernels == "compile":
            pools.append(replace(compiling, excluded_kernels=os.kernel_versions))
    return [_check(pool) for pool in pools]


def kernel_exclusion(pool: DriverPool) -> Object | None:
    """The node affinity requirement that keeps a compiling pool off the kernels precompiled pools serve, or None."""
    if not pool.excluded_kernels:
        return None
    return {"key": NFD_KERNEL, "operator": "NotIn", "values": list(pool.excluded_kernels)}


def with_os_tag(reference: str, os: NodeOperatingSystem) -> str:
    """NVIDIA's rule for OS-specific images: `-<osTag>` after the reference, unless it names a digest."""
    return reference if "sha256:" in reference else f"{reference}-{os.tag}"


def os_image(spec: ImageFields, os: NodeOperatingSystem) -> str:
    """An OS-specific sidecar image (GDS, GDRCopy)."""
    return with_os_tag(image_path(spec), os)


def driver_image(spec: DriverSpec, pool: DriverPool) -> str:
    """The driver image of a pool; precompiled images carry the kernel before the OS tag."""
    if pool.kernel is None:
        return os_image(spec, pool.os)
    if spec.version.startswith("sha256:"):
        raise ValueError("precompiled driver images are tagged per kernel: set driver.version to a tag, not a digest")
    if spec.repository or spec.version:
        return with_os_tag(f"{spec.repository}/{spec.image}:{spec.version}-{pool.kernel}", pool.os)
    return with_os_tag(f"{spec.image}-{pool.kernel}", pool.os)
