"""Where a pool's driver meets the rest of the stack: each pool checked against the driver it runs.

A pool runs the cluster's driver (`operator.driver`) or one of its own (:mod:`gpu_operator.config.driver_groups`),
so what the rest of the document asks of a driver is checked per pool, against that pool's merged driver spec:

* DRA: NVIDIA's DRA driver allocates GPUs with the R565 branch or newer, and its ComputeDomains need 570.158.01
  (:mod:`gpu_operator.facts.dra_driver`), on the pools whose kubelet plugin runs;
* kernel modules for the GPU generation (:mod:`gpu_operator.facts.gpu_kernel_modules`): Blackwell and Grace Hopper
  run only the open modules, GPUs before Turing only the proprietary ones;
* precompiled drivers exist per kernel: the OS images of the pools need their kernels listed
  (`cluster.operatingSystems[].kernelVersions`), the version is a branch tag, and, as NVIDIA's NVIDIADriver
  controller refuses (`nvidiadriver_controller.go` Reconcile), GDS and GDRCopy are not built into them; nor does it
  take GDS 2.17.5 or newer (`MinimumGDSVersionForOpenRM`) without the open modules;
* GPUDirect RDMA's legacy peermem path needs InfiniBand on the pool and a MOFED driver, from the Network Operator's
  DOCA-OFED container or from the host, and the two sources agree (:mod:`gpu_operator.config.network_checks` has
  the cluster-wide rules);
* vGPU: the vGPU guest driver (`driverType: vgpu`) runs on vGPU pools only (`pools[].gpu.vgpu`), with its
  licensing Secret, and a vGPU pool needs it.

Every rule names the key the value comes from: the pool's own driver where it writes the field, the cluster
driver's where the pool inherits it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from gpu_operator.config.clusterpolicy.driver import DriverSpec
from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.dra import dra_node_pools, dra_wanted
from gpu_operator.config.dra_checks import driver_version
from gpu_operator.config.driver_groups import DriverGroup, cluster_driver_pools, group_spec, written_groups
from gpu_operator.config.effective import pool_operating_system
from gpu_operator.config.errors import Problem
from gpu_operator.config.network import network_wanted
from gpu_operator.config.nvidia_driver import NvidiaDriverSpec, cluster_driver_document
from gpu_operator.config.pools import GpuPool
from gpu_operator.facts.dra_driver import MIN_COMPUTE_DOMAIN_DRIVER, MIN_DRIVER_BRANCH
from gpu_operator.facts.gpu_kernel_modules import module_support

__all__ = ["DRIVER_COMPAT_CHECKS", "MIN_GDS_FOR_OPEN_ONLY"]

Check = Callable[[GpuStackConfig], Iterator[Problem]]

#: GDS from this version needs the open modules (gpu-operator internal/consts `MinimumGDSVersionForOpenRM`).
MIN_GDS_FOR_OPEN_ONLY = (2, 17, 5)
_CD_TEXT = f"{MIN_COMPUTE_DOMAIN_DRIVER[0]}.{MIN_COMPUTE_DOMAIN_DRIVER[1]}.{MIN_COMPUTE_DOMAIN_DRIVER[2]:02d}"
#: NVIDIA's published data-center driver image (the chart's default).
_PUBLIC_DRIVER = DriverSpec()
#: NVIDIADriver keys whose ClusterPolicy place differs from `operator.driver.<key>`.
_CLUSTER_PLACES = {"gds": "operator.gds", "gdrcopy": "operator.gdrcopy"}


@dataclass(frozen=True)
class _Driver:
    """A driver as the rules see it: its merged spec, the pools that run it, and where each field is written."""

    spec: NvidiaDriverSpec
    pools: tuple[GpuPool, ...]
    group: DriverGroup | None = None
    """None for the cluster's ClusterPolicy driver."""

    def path(self, key: str) -> str:
        top, _, rest = key.partition(".")
        if self.group is not None and top in self.group.written_keys:
            return f"{self.group.path}.{key}"
        place = _CLUSTER_PLACES.get(top, f"operator.driver.{top}")
        return f"{place}.{rest}" if rest else place

    @property
    def own(self) -> bool:
        return self.group is not None

    def runs_on(self, doc: GpuStackConfig, pool: GpuPool) -> str:
        where = f"pools[{_index(doc, pool)}] ({pool.name})"
        return f"{where}, which runs {self.group.path}" if self.group is not None else where


def _index(doc: GpuStackConfig, pool: GpuPool) -> int:
    return next(index for index, candidate in enumerate(doc.pools) if candidate is pool)


def _drivers(doc: GpuStackConfig) -> list[_Driver]:
    """The cluster driver (with its pools; every node without pools) and each group whose spec holds together."""
    if not doc.operator.driver.enabled:
        return []
    drivers: list[_Driver] = []
    if not doc.operator.driver.use_nvidia_driver_crd:
        cluster = NvidiaDriverSpec.model_validate(cluster_driver_document(doc.operator))
        drivers.append(_Driver(cluster, cluster_driver_pools(doc)))
    for group in written_groups(doc):
        try:
            drivers.append(_Driver(group_spec(doc, group), group.pools, group))
        except ValueError:
            continue  # reported by the driver group checks
    return drivers


def _dra_floors(doc: GpuStackConfig) -> Iterator[Problem]:
    if not dra_wanted(doc.dra, doc.pools):
        return
    dra_pools = dra_node_pools(doc.dra, doc.pools)
    for driver in _drivers(doc):
        pools = [pool for pool in driver.pools if pool in dra_pools]
        everywhere = not doc.pools and not driver.own
        if not (pools or everywhere):
            continue
        version = driver_version(driver.spec.version)
        if version is None:
            continue
        where = f" ({', '.join(driver.runs_on(doc, pool) for pool in pools)})" if pools else ""
        gpus = doc.dra.gpus and (everywhere or any(pool.gpu_allocation == "dra" for pool in pools))
        if gpus and version[0] < MIN_DRIVER_BRANCH:
            yield Problem(driver.path("version"), (
                f"{driver.spec.version} is branch {version[0]}; NVIDIA's DRA driver allocates GPUs with the "
                f"R{MIN_DRIVER_BRANCH} branch or newer{where}: set a {MIN_DRIVER_BRANCH}.x or later driver version, "
                "or turn DRA off"))
        elif doc.dra.compute_domains and version < MIN_COMPUTE_DOMAIN_DRIVER:
            yield Problem(driver.path("version"), (
                f"{driver.spec.version} is older than {_CD_TEXT}, which ComputeDomains need (the compute-domain "
                f"plugin does not start on older drivers){where}: set {_CD_TEXT} or later, or "
                "dra.computeDomains: false"))


_MODULE_RULES = {
    ("open-only", "proprietary"): ("runs only NVIDIA's open kernel modules (Blackwell and Grace Hopper have no "
                                   "proprietary support)", "open (or auto)"),
    ("proprietary-only", "open"): ("predates Turing, and NVIDIA's open kernel modules support Turing and later",
                                   "proprietary (or auto)"),
}


def _modules_fit_the_gpu(doc: GpuStackConfig) -> Iterator[Problem]:
    for driver in _drivers(doc):
        for pool in driver.pools:
            hardware = pool.hardware
            if hardware is None or hardware.gpu.device_id is None:
                continue
            rule = _MODULE_RULES.get((module_support(hardware.gpu.device_id), driver.spec.kernel_module_type))
            if rule is not None:
                why, fix = rule
                yield Problem(driver.path("kernelModuleType"), (
                    f"{driver.spec.kernel_module_type}, but the {hardware.gpu.model} of {driver.runs_on(doc, pool)} "
                    f"{why}: set kernelModuleType {fix}"))


def _listed_kernels(doc: GpuStackConfig, tag: str) -> tuple[str, ...] | None:
    """The kernels written for an OS image in `cluster.operatingSystems`; None when the OS is not written there."""
    if "operating_systems" not in doc.cluster.model_fields_set:
        return None
    return next((os.kernel_versions for os in doc.cluster.operating_systems if os.tag == tag), None)


def _kernels_of_every_os(doc: GpuStackConfig, where: str) -> Iterator[Problem]:
    """A precompiled driver on nodes outside the pools runs on every OS of `cluster.operatingSystems`."""
    if "operating_systems" not in doc.cluster.model_fields_set:
        yield Problem("cluster.operatingSystems", (
            f"{where} is precompiled and selects nodes outside the pools, whose images exist per kernel: list the "
            "nodes' OS with its kernelVersions"))
        return
    for index, os in enumerate(doc.cluster.operating_systems):
        if not os.kernel_versions:
            yield Problem(f"cluster.operatingSystems[{index}].kernelVersions", (
                f"{where} is precompiled, and its images exist per kernel: list the kernels of the {os.tag} nodes"))


def _precompiled(doc: GpuStackConfig) -> Iterator[Problem]:
    for driver in _drivers(doc):
        if not (driver.own and driver.spec.use_precompiled):
            continue  # the cluster driver's precompiled rules are gpu_operator.config.checks'
        spec = driver.spec
        if spec.version.startswith("sha256:"):
            yield Problem(driver.path("version"), "precompiled images are tagged per kernel: use a driver branch tag")
        for section, enabled in (("gds", spec.gds.enabled), ("gdrcopy", spec.gdrcopy.enabled)):
            if enabled:
                yield Problem(driver.path(f"{section}.enabled"), (
                    "GPUDirect Storage (nvidia-fs) and GDRCopy are not supported with precompiled drivers (NVIDIA's "
                    "NVIDIADriver controller refuses them): turn it off for this driver, or usePrecompiled: false"))
        group = driver.group
        if group is not None and (group.node_selector or group.default):
            yield from _kernels_of_every_os(doc, group.path)
        for pool in driver.pools:
            image = pool_operating_system(pool, doc.aks)
            if image is not None and not _listed_kernels(doc, image.tag):
                yield Problem("cluster.operatingSystems", (
                    f"{driver.runs_on(doc, pool)} runs a precompiled driver, whose images exist per kernel: list "
                    f"{{id: {image.id}, versionId: \"{image.version_id}\", kernelVersions: [...]}} with the kernels "
                    "of its node image"))


def _gds_needs_open_modules(doc: GpuStackConfig) -> Iterator[Problem]:
    for driver in _drivers(doc):
        gds = driver.spec.gds
        if not (driver.own and gds.enabled) or driver.spec.kernel_module_type == "open":
            continue
        version = driver_version(gds.version.removeprefix("v"))
        if gds.version.startswith("sha256") or (version is not None and version >= MIN_GDS_FOR_OPEN_ONLY):
            yield Problem(driver.path("gds.enabled"), (
                f"GPUDirect Storage {gds.version} is supported only with NVIDIA's open kernel modules (NVIDIA's "
                "NVIDIADriver controller refuses it otherwise): set kernelModuleType: open, or turn gds off"))


def _peermem_pairs_with_mofed(doc: GpuStackConfig) -> Iterator[Problem]:
    network = network_wanted(doc.network, doc.pools)
    some_infiniband = any(pool.has_infiniband for pool in doc.pools)
    for driver in _drivers(doc):
        rdma = driver.spec.rdma
        if not rdma.enabled:
            continue
        if driver.own or some_infiniband:
            for pool in driver.pools:
                if not pool.has_infiniband:
                    yield Problem(driver.path("rdma.enabled"), (
                        f"{driver.runs_on(doc, pool)} has no InfiniBand ({pool.vm_size}), and legacy nvidia-peermem "
                        "waits there for a MOFED driver that never comes, so its driver never installs: give the "
                        "pool a driver of its own without rdma (pools[].driver: {rdma: {enabled: false}})"))
        if not driver.own or not any(pool.has_infiniband for pool in driver.pools):
            continue  # the cluster-wide MOFED rules are gpu_operator.config.network_checks'
        if not rdma.use_host_mofed and not network:
            yield Problem(driver.path("rdma.enabled"), (
                "legacy nvidia-peermem needs a MOFED driver and none is installed: turn network.enabled on (the "
                "Network Operator's DOCA-OFED container), set rdma.useHostMofed: true where the node image brings "
                "MOFED, or rdma.enabled: false for DMA-BUF (open kernel modules, no MOFED needed)"))
        elif rdma.use_host_mofed and network and doc.network.mofed == "operator":
            yield Problem(driver.path("rdma.useHostMofed"), (
                "contradicts network.mofed: operator (the Network Operator's DOCA-OFED container installs MOFED): "
                "set network.mofed: host when the node image brings MOFED, or remove useHostMofed"))


def _vgpu_on_vgpu_pools(doc: GpuStackConfig) -> Iterator[Problem]:
    for driver in _drivers(doc):
        guest = driver.spec.driver_type == "vgpu"
        for pool in driver.pools:
            vgpu = pool.gpu is not None and pool.gpu.vgpu
            if guest and not vgpu:
                yield Problem(driver.path("driverType"), (
                    f"vgpu is NVIDIA's vGPU guest driver, and {driver.runs_on(doc, pool)} has whole GPUs "
                    f"({pool.vm_size}): use driverType gpu there, or declare pools[].gpu.vgpu: true for a vGPU VM size"))
            elif vgpu and not guest:
                yield Problem(f"pools[{_index(doc, pool)}].driver", (
                    f"the pool's GPU is a vGPU, which needs NVIDIA's vGPU guest driver: give it "
                    "driver: {driverType: vgpu, licensingConfig: {secretName: ...}} and the vGPU driver image "
                    "(repository, image, version) from NVIDIA's licensing portal"))
        licensing = driver.spec.licensing_config
        public = (driver.spec.repository, driver.spec.image) == (_PUBLIC_DRIVER.repository, _PUBLIC_DRIVER.image)
        if guest and public:
            # the fix is this driver's own image, whatever the cluster's is
            yield Problem(f"{driver.group.path}.image" if driver.group is not None else driver.path("image"), (
                f"{_PUBLIC_DRIVER.repository}/{_PUBLIC_DRIVER.image} is NVIDIA's data-center driver, not the vGPU guest "
                "driver, whose image you build from NVIDIA's vGPU package: set repository, image and version to it"))
        if guest and not (licensing.secret_name or licensing.name):
            yield Problem(driver.path("licensingConfig"), (
                "the vGPU guest driver runs unlicensed, and slows down after 20 minutes: set licensingConfig."
                "secretName to the Secret with gridd.conf and the NLS client token"))


DRIVER_COMPAT_CHECKS: tuple[Check, ...] = (
    _dra_floors,
    _modules_fit_the_gpu,
    _precompiled,
    _gds_needs_open_modules,
    _peermem_pairs_with_mofed,
    _vgpu_on_vgpu_pools,
)
