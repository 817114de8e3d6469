"""Driver groups: which GPU nodes run which driver, when pools (or node selectors) have drivers of their own.

A pool names a driver under `pools[].driver`: the name of an entry of the top-level `drivers` section (several
pools naming one entry share one driver, a named group of pools), or a spec of its own (a group of one, named
after the pool). A `drivers` entry may also select nodes by `nodeSelector`, as NVIDIA's NVIDIADriver does, for
nodes outside the pools (a cluster the stack only installs software on). Each group is one NVIDIADriver to
NVIDIA's operator: its name is the NVIDIADriver's, its spec (:mod:`gpu_operator.config.nvidia_driver`) is merged
over the cluster's driver, and its nodes carry the label NVIDIA's operator routes nodes with,
`nvidia.com/gpu-operator.driver.owner=<name>` (pools from creation; nodes a selector matches by the operator
controller, as NVIDIA's operator labels them).

Pools without a driver of their own keep the cluster's (`operator.driver`). With `operator.driver.useNvidiaDriverCRD`
the cluster's driver is itself the default NVIDIADriver (`default: true`): the `drivers` entry marked so, or one
named `default` (the name NVIDIA's chart gives the default it deploys) whose spec is the cluster driver's.

What a group adds to its merged spec is what the effective config adds to the cluster driver
(:mod:`gpu_operator.config.effective`): the open kernel modules on InfiniBand pools when no kernel module type is
chosen, the host's MOFED for legacy peermem with `network.mofed: host`, and the DRA node label for the driver
manager.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterator

from gpu_operator.config.clusterpolicy.driver import ContainerProbe
from gpu_operator.config.clusterpolicy.spec import ClusterPolicySpec
from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.dra import EVICTION_LABEL_ENV, dra_wanted
from gpu_operator.config.kube import EnvVar
from gpu_operator.config.network import network_wanted
from gpu_operator.config.nvidia_driver import DRIVER_OWNER_LABEL, NvidiaDriverSpec, merged_spec
from gpu_operator.config.pools import GpuPool
from gpu_operator.facts.dra_driver import DRA_NODE_LABEL

__all__ = [
    "DEFAULT_DRIVER_NAME",
    "DRIVER_OWNER_LABEL",
    "DriverGroup",
    "cluster_driver_pools",
    "default_driver_name",
    "default_startup_probe",
    "driver_groups",
    "group_spec",
    "has_driver_groups",
    "operator_with",
    "pool_driver_name",
    "unlabelled_driver_notes",
    "written_groups",
]

#: The NVIDIADriver NVIDIA's chart deploys as the default (`driver.nvidiaDriverCRD.deployDefaultCR`).
DEFAULT_DRIVER_NAME = "default"


@dataclass(frozen=True)
class DriverGroup:
    """One driver of its own: an NVIDIADriver's name, the spec as written, where, and the pools it serves."""

    name: str
    path: str
    """Where the spec is written: `drivers.<name>`, `pools[i].driver`, or `operator.driver` (the implicit default)."""
    written: NvidiaDriverSpec
    pools: tuple[GpuPool, ...]

    @property
    def default(self) -> bool:
        return self.written.default

    @property
    def node_selector(self) -> dict[str, str]:
        return dict(self.written.node_selector)

    @property
    def written_keys(self) -> frozenset[str]:
        """The spec's top-level keys the group writes itself (the others are the cluster driver's)."""
        return frozenset(self.written.model_dump(by_alias=True, exclude_unset=True))


def default_driver_name(doc: GpuStackConfig) -> str | None:
    """The default NVIDIADriver's name with useNvidiaDriverCRD, else None (the cluster driver is ClusterPolicy's)."""
    if not doc.operator.driver.use_nvidia_driver_crd:
        return None
    return next((name for name, spec in doc.drivers.items() if spec.default), DEFAULT_DRIVER_NAME)


def pool_driver_name(doc: GpuStackConfig, pool: GpuPool) -> str | None:
    """The NVIDIADriver whose driver the pool runs (the owner label its nodes carry); None: the ClusterPolicy one."""
    if pool.gpu_driver != "operator" or pool.workload != "container":
        return None
    if isinstance(pool.driver, str):
        return pool.driver
    if pool.driver is not None:
        return pool.name
    return default_driver_name(doc)


def cluster_driver_pools(doc: GpuStackConfig) -> tuple[GpuPool, ...]:
    """The pools that run the ClusterPolicy driver (`nvidia-driver-daemonset`): none with useNvidiaDriverCRD."""
    if doc.operator.driver.use_nvidia_driver_crd:
        return ()
    return tuple(pool for pool in doc.pools if pool.driver is None)


def written_groups(doc: GpuStackConfig) -> Iterator[DriverGroup]:
    """Every group as written (the `drivers` entries, then the pools' own specs, then the implicit default)."""
    owners = {pool.name: pool_driver_name(doc, pool) for pool in doc.pools}
    for name, spec in doc.drivers.items():
        yield DriverGroup(name, f"drivers.{name}", spec, tuple(p for p in doc.pools if owners[p.name] == name))
    for index, pool in enumerate(doc.pools):
        if isinstance(pool.driver, NvidiaDriverSpec):
            yield DriverGroup(pool.name, f"pools[{index}].driver", pool.driver, (pool,))
    default = default_driver_name(doc)
    if default is not None and default not in doc.drivers:
        implicit = NvidiaDriverSpec.model_validate({"default": True})
        yield DriverGroup(default, "operator.driver", implicit, tuple(p for p in doc.pools if owners[p.name] == default))


def unlabelled_driver_notes(doc: GpuStackConfig) -> list[str]:
    """Drivers whose nodes nobody labels: those a node selector picks, and the default on nodes outside the pools,
    run once the owner label is on the node, which the operator controller writes (as NVIDIA's operator does)."""
    if doc.controller_enabled or not doc.operator.driver.enabled:
        return []
    notes = []
    for group in written_groups(doc):
        if group.node_selector:
            notes.append(f"{group.path}.nodeSelector: the nodes it selects run this driver once labelled "
                         f"{DRIVER_OWNER_LABEL}={group.name}, which the operator controller writes (as NVIDIA's "
                         "operator does), and none runs: set agents.image or agents.build, or name the driver in the "
                         "pools it is for (pools[].driver)")
        elif group.default:
            where = "the GPU nodes" if not doc.pools else "GPU nodes outside the pools"
            notes.append(f"operator.driver.useNvidiaDriverCRD: {where} run the default NVIDIADriver {group.name!r} "
                         f"once labelled {DRIVER_OWNER_LABEL}={group.name}, which the operator controller writes, "
                         "and none runs: set agents.image or agents.build" +
                         ("" if doc.pools else ", or useNvidiaDriverCRD: false"))
    return notes


def has_driver_groups(doc: GpuStackConfig) -> bool:
    """Whether any driver DaemonSet is rendered the NVIDIADriver way (a group, or useNvidiaDriverCRD)."""
    return bool(doc.drivers) or doc.operator.driver.use_nvidia_driver_crd or any(p.driver is not None for p in doc.pools)


def _kernel_module_type_chosen(doc: GpuStackConfig, written: NvidiaDriverSpec) -> bool:
    cluster = {"kernel_module_type", "use_open_kernel_modules"} & doc.operator.driver.model_fields_set
    return bool(cluster or {"kernel_module_type", "use_open_kernel_modules"} & written.model_fields_set)


def group_spec(doc: GpuStackConfig, group: DriverGroup) -> NvidiaDriverSpec:
    """The group's spec merged over the cluster driver, with what its pools imply (ValueError if it does not fit)."""
    spec = merged_spec(doc.operator, group.written)
    updates: dict[str, object] = {}
    infiniband = any(pool.has_infiniband for pool in group.pools)
    if infiniband and not _kernel_module_type_chosen(doc, group.written):
        updates["kernel_module_type"] = "open"
    rdma = spec.rdma
    if network_wanted(doc.network, doc.pools) and doc.network.mofed == "host" and rdma.enabled \
            and not rdma.use_host_mofed:
        updates["rdma"] = rdma.model_copy(update={"use_host_mofed": True})
    manager = spec.manager
    if dra_wanted(doc.dra, doc.pools) and all(var.name != EVICTION_LABEL_ENV for var in manager.env):
        env = (*manager.env, EnvVar(name=EVICTION_LABEL_ENV, value=DRA_NODE_LABEL))
        updates["manager"] = manager.model_copy(update={"env": env})
    return spec.model_copy(update=updates) if updates else spec


def driver_groups(doc: GpuStackConfig) -> tuple[tuple[DriverGroup, NvidiaDriverSpec], ...]:
    """Every group with its merged spec, in document order (the config checks have refused what does not fit)."""
    if not doc.operator.driver.enabled:
        return ()
    return tuple((group, group_spec(doc, group)) for group in written_groups(doc))


def default_startup_probe(precompiled: bool) -> ContainerProbe:
    """NVIDIA's startup probe for an NVIDIADriver without one (internal/state/driver.go `getDefaultStartupProbe`):
    a precompiled driver only loads its modules, so it is probed after 5 s instead of 60."""
    return ContainerProbe(initial_delay_seconds=5 if precompiled else 60, timeout_seconds=60, period_seconds=10,
                          success_threshold=1, failure_threshold=120)


def operator_with(spec: ClusterPolicySpec, driver: NvidiaDriverSpec) -> ClusterPolicySpec:
    """The ClusterPolicy spec whose driver is `driver`: what the operand render reads (driver, GDS, GDRCopy and the
    daemonsets' scheduling), in ClusterPolicy's vocabulary."""
    licensing = driver.licensing_config
    cluster_driver = spec.driver.model_copy(update={
        "repository": driver.repository,
        "image": driver.image,
        "version": driver.version,
        "image_pull_policy": driver.image_pull_policy,
        "image_pull_secrets": driver.image_pull_secrets,
        "use_precompiled": driver.use_precompiled,
        "kernel_module_type": driver.kernel_module_type,
        "startup_probe": driver.startup_probe or default_startup_probe(driver.use_precompiled),
        "liveness_probe": driver.liveness_probe,
        "readiness_probe": driver.readiness_probe,
        "rdma": driver.rdma,
        "manager": driver.manager,
        "upgrade_policy": driver.upgrade_policy,
        "repo_config": spec.driver.repo_config.model_copy(update={"config_map_name": driver.repo_config.name}),
        "cert_config": driver.cert_config,
        "licensing_config": spec.driver.licensing_config.model_copy(update={
            "secret_name": licensing.secret_name, "config_map_name": licensing.name,
            "nls_enabled": licensing.nls_enabled}),
        "virtual_topology": spec.driver.virtual_topology.model_copy(update={
            "config": driver.virtual_topology_config.name}),
        "kernel_module_config": driver.kernel_module_config,
        "secret_env": driver.secret_env,
        "resources": driver.resources,
        "args": driver.args,
        "env": driver.env,
        "host_network": driver.host_network,
    })
    daemonsets = spec.daemonsets.model_copy(update={
        # getDriverSpec's sanitizeDriverLabels: `app` and `app.kubernetes.io/*` keep selecting the pods as before
        "labels": {key: value for key, value in driver.labels.items()
                   if key != "app" and not key.startswith("app.kubernetes.io/")},
        "annotations": driver.annotations,
        "tolerations": driver.tolerations,
        "priority_class_name": driver.priority_class_name or "system-node-critical",
        "pod_security_context": driver.pod_security_context,
    })
    return spec.model_copy(update={"driver": cluster_driver, "gds": driver.gds, "gdrcopy": driver.gdrcopy,
                                   "daemonsets": daemonsets})
