"""state-driver: the containerized NVIDIA driver, `nvidia-driver-daemonset`.

The driver pod builds (or, with precompiled images, just loads) the kernel modules on the node and shares its
root filesystem under `/run/nvidia/driver`. Its `k8s-driver-manager` init container first unloads an old driver
and pauses the other operands; the startup probe (our script, ConfigMap `nvidia-driver-startup-probe`) then
publishes `/run/nvidia/validations/.driver-ctr-ready`, which starts the validation chain of every other operand.
Sidecars load the optional modules: `nvidia-peermem-ctr` (GPUDirect RDMA), `nvidia-fs-ctr` (GPUDirect Storage)
and `nvidia-gdrcopy-ctr` (GDRCopy).

NVIDIA's operator picks the image suffix (`-<osTag>`) from the OS of the first GPU node it finds; we render one
DaemonSet per OS listed in `cluster.operatingSystems` instead. One OS gives NVIDIA's single
`nvidia-driver-daemonset`; several give `nvidia-driver-daemonset-<osTag>`, each pinned to its OS by the NFD
`system-os_release` labels, as NVIDIA's NVIDIADriver controller pins its OS pools. Precompiled drivers get one
DaemonSet per (kernel, OS), named and selected as NVIDIA names and selects them; nodes whose kernel the config
does not list get the compiling DaemonSet of their OS (`cluster.unlistedKernels: compile`, the default), since
NVIDIA would find their kernel at runtime and a render cannot.

`DRIVER_CONFIG_DIGEST` (in the driver manager and the driver container) fingerprints what the pod installs, so
both can keep a loaded driver when only something else changed (:mod:`.driver_digest` says what is hashed). The
optional `driver` settings (licensing, topology, kernel module parameters, repositories, certificates, secret
env, subscriptions) are added by :mod:`.driver_config_mounts`; OS pools and image tags come from
:mod:`.driver_pools`.

Differences from upstream, on purpose: no Role/RoleBinding (their only rule is `use` of OpenShift's `privileged`
SCC), no `config.openshift.io` clusterversions rule, no OpenShift Driver Toolkit sidecar and no
`OPENSHIFT_VERSION`/proxy env (OpenShift is not supported). When our driver manager runs the init container,
the ClusterRole grants only what it calls (`driver_manager.AGENT_RULES`); NVIDIA's program gets NVIDIA's rules. The liveness
and readiness probes, which NVIDIA's template does not define, run the startup-probe check when configured.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_operator.config.cluster import NodeOperatingSystem
from gpu_operator.config.clusterpolicy.common import ContainerOperandSpec
from gpu_operator.config.clusterpolicy.driver import ContainerProbe, DriverSpec, DriverUpgradePolicy
from gpu_operator.config.driver_groups import DriverGroup, driver_groups, has_driver_groups, operator_with
from gpu_operator.config.node_metadata import DRIVER_OWNER_LABEL
from gpu_operator.config.nvidia_driver import NvidiaDriverSpec
from gpu_operator.render.context import RenderContext
from gpu_operator.render.k8s import (
    Object,
    cluster_role,
    cluster_role_binding,
    config_map,
    config_map_volume,
    daemonset,
    deploy_selector,
    env,
    env_field,
    host_path,
    mount,
    privileged,
    rule,
    service_account,
)
from gpu_operator.render.operands.common import VALIDATIONS_DIR, read_script
from gpu_operator.render.operands.driver_config_mounts import config_mounts, package_files
from gpu_operator.render.operands.driver_digest import DIGEST_ENV, config_digest
from gpu_operator.render.operands.driver_manager import driver_manager_init, manager_rules, pull_secrets_of
from gpu_operator.render.operands.driver_pools import (
    DriverPool,
    driver_image,
    driver_pools,
    group_driver_pools,
    kernel_exclusion,
    os_image,
)
from gpu_operator.render.operands.driver_update import update_strategy
from gpu_operator.render.operands.nvidia_driver_daemonset import (
    ANTI_AFFINITY_COMPONENTS,
    STATE_LABEL,
    daemonset_labels,
    shape_pod,
)
from gpu_operator.render.operands.nvidia_driver_names import driver_name
from gpu_operator.render.transforms import finalize_daemonset, merge_env

__all__ = [
    "STATE",
    "KEY",
    "NAME",
    "DAEMONSET",
    "MAIN_CONTAINER",
    "STARTUP_PROBE_CONFIG_MAP",
    "render",
    "startup_probe_script",
]

STATE = "state-driver"
KEY = "driver"
#: ServiceAccount, ClusterRole and ClusterRoleBinding name.
NAME = "nvidia-driver"
DAEMONSET = "nvidia-driver-daemonset"
COMPONENT = "nvidia-driver"
MAIN_CONTAINER = "nvidia-driver-ctr"
PEERMEM_CONTAINER = "nvidia-peermem-ctr"
STARTUP_PROBE_CONFIG_MAP = "nvidia-driver-startup-probe"
PRECOMPILED_LABEL = "nvidia.com/precompiled"

_SCRIPT_PATH = "/usr/local/bin/startup-probe.sh"
_SCRIPT_KEY = "startup-probe.sh"
_DRIVER_ROOT = "/run/nvidia/driver"
_SELINUX = {"seLinuxOptions": {"level": "s0"}}

#: NVIDIA's ClusterRole, for NVIDIA's k8s-driver-manager (client-go's drain helper reads DaemonSets, its DRA
#: checks read ResourceClaims).
_RULES = [
    rule([""], ["nodes"], ["get", "list", "patch", "update", "watch"]),
    rule([""], ["pods"], ["get", "list", "watch"]),
    rule([""], ["pods/eviction"], ["create"]),
    rule(["apps"], ["daemonsets"], ["get"]),
    rule(["resource.k8s.io"], ["resourceclaims"], ["get", "list"]),
]
#: The cluster driver keeps off the nodes labelled for a driver of their own.
_NOT_OWNED = {"key": DRIVER_OWNER_LABEL, "operator": "DoesNotExist"}
_PROBE_FIELDS = {
    "initial_delay_seconds": "initialDelaySeconds",
    "timeout_seconds": "timeoutSeconds",
    "period_seconds": "periodSeconds",
    "success_threshold": "successThreshold",
    "failure_threshold": "failureThreshold",
}


# --- the driver container ------------------------------------------------------------------------------


def startup_probe_script() -> str:
    """Our startup-probe script (package data), the content of ConfigMap `nvidia-driver-startup-probe`."""
    return read_script("driver-startup-probe.sh")


def _probe(action: Object, defaults: Object, configured: ContainerProbe | None) -> Object:
    """A probe: `action`, the template's timings, then every timing the config sets."""
    probe = {**action, **defaults}
    if configured is not None:
        for attribute, key in _PROBE_FIELDS.items():
            value = getattr(configured, attribute)
            if value is not None:
                probe[key] = value
    return probe


def _exec(*command: str) -> Object:
    return {"exec": {"command": list(command)}}


def _probe_timings(initial: int, failure: int, success: int, period: int, timeout: int) -> Object:
    return {
        "initialDelaySeconds": initial,
        "failureThreshold": failure,
        "successThreshold": success,
        "periodSeconds": period,
        "timeoutSeconds": timeout,
    }


def _driver_probes(spec: DriverSpec) -> Object:
    """Startup probe always; liveness/readiness (running the same check) only when configured."""
    check = _exec("sh", _SCRIPT_PATH)
    probes = {"startupProbe": _probe(check, _probe_timings(60, 120, 1, 10, 60), spec.startup_probe)}
    if spec.liveness_probe is not None:
        probes["livenessProbe"] = _probe(check, {}, spec.liveness_probe)
    if spec.readiness_probe is not None:
        probes["readinessProbe"] = _probe(check, {}, spec.readiness_probe)
    return probes


def _feature_env(ctx: RenderContext) -> list[Object]:
    """What the driver container must build and load, in NVIDIA's order."""
    spec = ctx.spec.driver
    flags = [
        (True, "KERNEL_MODULE_TYPE", spec.kernel_module_type),
        (spec.kernel_module_type == "open", "OPEN_KERNEL_MODULES_ENABLED", "true"),
        (ctx.spec.gdrcopy.enabled, "GDRCOPY_ENABLED", "true"),
        (ctx.spec.gds.enabled, "GDS_ENABLED", "true"),
        (spec.rdma.enabled, "GPU_DIRECT_RDMA_ENABLED", "true"),
        (spec.rdma.enabled and spec.rdma.use_host_mofed, "USE_HOST_MOFED", "true"),
    ]
    return [env(name, value) for wanted, name, value in flags if wanted]


def _manager_env(spec: DriverSpec) -> list[Object]:
    if not spec.rdma.enabled:
        return []
    return [env("GPU_DIRECT_RDMA_ENABLED", True), *([env("USE_HOST_MOFED", True)] if spec.rdma.use_host_mofed else [])]


def _driver_container(ctx: RenderContext, image: str) -> Object:
    spec = ctx.spec.driver
    container: Object = {
        "name": MAIN_CONTAINER,
        "image": image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": ["nvidia-driver"],
        "args": list(spec.args) or ["init"],
        "env": [env_field("NODE_NAME", "spec.nodeName"), env_field("NODE_IP", "status.hostIP")],
        "securityContext": privileged(**_SELINUX),
        "volumeMounts": [
            mount("run-nvidia", "/run/nvidia", propagation="Bidirectional"),
            mount("run-nvidia-fabricmanager", "/run/nvidia-fabricmanager"),
            mount("run-nvidia-topologyd", "/run/nvidia-topologyd"),
            mount("var-log", "/var/log"),
            mount("dev-log", "/dev/log"),
            mount("host-os-release", "/host-etc/os-release", read_only=True),
            mount("mlnx-ofed-usr-src", "/run/mellanox/drivers/usr/src", propagation="HostToContainer"),
            mount("run-mellanox-drivers", "/run/mellanox/drivers", propagation="HostToContainer"),
            mount("host-sys-devices-system", "/sys/devices/system"),
            mount("firmware-search-path", "/sys/module/firmware_class/parameters/path"),
            mount("nv-firmware", "/lib/firmware"),
            mount("driver-startup-probe-script", _SCRIPT_PATH, sub_path=_SCRIPT_KEY),
        ],
        **_driver_probes(spec),
        "lifecycle": {"preStop": _exec(
            "/bin/sh", "-c",
            f"rm -f {VALIDATIONS_DIR}/.driver-ctr-ready {VALIDATIONS_DIR}/.driver-daemons-status",
        )},
    }
    merge_env(container, _feature_env(ctx))
    merge_env(container, spec.env)
    return container


# --- sidecars ------------------------------------------------------------------------------------------


def _sidecar_mounts() -> list[Object]:
    return [mount("var-log", "/var/log"), mount("dev-log", "/dev/log", read_only=True)]


def _peermem_container(ctx: RenderContext, image: str) -> Object:
    """`nvidia-peermem-ctr`: reloads nvidia-peermem whenever a MOFED reinstall unloads it."""
    spec = ctx.spec.driver
    check = _exec("sh", "-c", "nvidia-driver probe_nvidia_peermem")
    container: Object = {
        "name": PEERMEM_CONTAINER,
        "image": image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": ["nvidia-driver"],
        "args": ["reload_nvidia_peermem"],
        "securityContext": privileged(**_SELINUX),
        "volumeMounts": [
            mount("run-nvidia", "/run/nvidia", propagation="Bidirectional"),
            *_sidecar_mounts(),
            mount("run-mellanox-drivers", "/run/mellanox/drivers", propagation="HostToContainer"),
        ],
        "startupProbe": {**check, **_probe_timings(10, 120, 1, 10, 10)},
        "livenessProbe": {**check, **_probe_timings(30, 1, 1, 30, 10)},
    }
    if spec.rdma.use_host_mofed:
        merge_env(container, [env("USE_HOST_MOFED", True)])
    return container


@dataclass(frozen=True)
class _ModuleSidecar:
    """A sidecar that waits for the driver, then builds and loads one extra kernel module."""

    name: str
    section: str
    installer: str
    module: str


_MODULE_SIDECARS = (
    _ModuleSidecar("nvidia-fs-ctr", "gds", "nvidia-gds-driver", "nvidia_fs"),
    _ModuleSidecar("nvidia-gdrcopy-ctr", "gdrcopy", "nvidia-gdrcopy-driver", "gdrdrv"),
)


def _module_sidecar(sidecar: _ModuleSidecar, spec: ContainerOperandSpec, os: NodeOperatingSystem) -> Object:
    wait = (
        f"until [ -d {_DRIVER_ROOT}/usr/src ] && lsmod | grep nvidia; "
        f"do echo waiting for the nvidia driver to be installed; sleep 10; done; "
        f"exec {sidecar.installer} install"
    )
    container: Object = {
        "name": sidecar.name,
        "image": os_image(spec, os),
        "imagePullPolicy": spec.image_pull_policy,
        "command": ["bash", "-xc"],
        "args": [wait],
        "securityContext": privileged(**_SELINUX),
        "volumeMounts": [mount("run-nvidia", "/run/nvidia", propagation="HostToContainer"), *_sidecar_mounts()],
        "startupProbe": {**_exec("sh", "-c", f"lsmod | grep {sidecar.module}"), **_probe_timings(10, 120, 1, 10, 10)},
    }
    merge_env(container, spec.env)
    return container


def _enabled_module_sidecars(ctx: RenderContext) -> list[tuple[_ModuleSidecar, ContainerOperandSpec]]:
    return [(s, getattr(ctx.spec, s.section)) for s in _MODULE_SIDECARS if getattr(ctx.spec, s.section).enabled]


# --- the DaemonSet -------------------------------------------------------------------------------------


def _volumes(spec: DriverSpec) -> list[Object]:
    host_mofed = spec.rdma.enabled and spec.rdma.use_host_mofed
    return [
        host_path("run-nvidia", "/run/nvidia", "DirectoryOrCreate"),
        host_path("var-log", "/var/log"),
        host_path("dev-log", "/dev/log"),
        host_path("host-os-release", "/etc/os-release"),
        host_path("run-nvidia-fabricmanager", "/run/nvidia-fabricmanager", "DirectoryOrCreate"),
        host_path("run-nvidia-topologyd", "/run/nvidia-topologyd", "DirectoryOrCreate"),
        host_path("mlnx-ofed-usr-src", "/usr/src" if host_mofed else "/run/mellanox/drivers/usr/src", "DirectoryOrCreate"),
        host_path("run-mellanox-drivers", "/run/mellanox/drivers", "DirectoryOrCreate"),
        host_path("run-nvidia-validations", VALIDATIONS_DIR, "DirectoryOrCreate"),
        host_path("host-root", "/"),
        host_path("host-sys", "/sys", "Directory"),
        host_path("firmware-search-path", "/sys/module/firmware_class/parameters/path"),
        host_path("host-sys-devices-system", "/sys/devices/system", "Directory"),
        host_path("nv-firmware", f"{_DRIVER_ROOT}/lib/firmware", "DirectoryOrCreate"),
        config_map_volume("driver-startup-probe-script", STARTUP_PROBE_CONFIG_MAP, default_mode=0o755),
    ]


def _anti_affinity(components: tuple[str, ...]) -> Object:
    """Never two driver pods on one node, whichever DaemonSet they come from."""
    term = {
        "labelSelector": {"matchExpressions": [
            {"key": "app.kubernetes.io/component", "operator": "In", "values": list(components)},
        ]},
        "topologyKey": "kubernetes.io/hostname",
    }
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _node_affinity(requirements: list[Object], affinity: Object | None) -> Object:
    """`affinity` (a NodeAffinity) with `requirements` added to each of its required terms (one term without)."""
    node = dict(affinity or {})
    if requirements:
        required = node.get("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": [{}]})
        node["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
            {**term, "matchExpressions": [*term.get("matchExpressions", []), *requirements]}
            for term in required["nodeSelectorTerms"]
        ]}
    return {"nodeAffinity": node} if node else {}


def _pull_secrets(ctx: RenderContext, sidecars: list[tuple[_ModuleSidecar, ContainerOperandSpec]]) -> list[Object]:
    spec = ctx.spec.driver
    names = [*pull_secrets_of(ctx, spec.manager), *spec.image_pull_secrets]
    for _, sidecar_spec in sidecars:
        names += sidecar_spec.image_pull_secrets
    return [{"name": name} for name in dict.fromkeys(names)]


@dataclass(frozen=True)
class _PodStyle:
    """What differs between NVIDIA's two driver templates (ClusterPolicy's and NVIDIADriver's) in the pod."""

    service_account: str = NAME
    components: tuple[str, ...] = (COMPONENT,)
    requirements: tuple[Object, ...] = ()
    """Node affinity requirements every node of the DaemonSet meets (beside the kernel exclusion)."""
    affinity: Object | None = None


def _pod(ctx: RenderContext, pool: DriverPool, style: _PodStyle) -> Object:
    spec = ctx.spec.driver
    image = driver_image(spec, pool)
    module_sidecars = _enabled_module_sidecars(ctx)
    containers = [
        _driver_container(ctx, image),
        *([_peermem_container(ctx, image)] if spec.rdma.enabled else []),
        *(_module_sidecar(sidecar, sidecar_spec, pool.os) for sidecar, sidecar_spec in module_sidecars),
    ]
    kernels = kernel_exclusion(pool)
    requirements = [*style.requirements, *([kernels] if kernels is not None else [])]
    pod: Object = {
        "nodeSelector": {**deploy_selector("driver"), **pool.node_selector},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {**_anti_affinity(style.components), **_node_affinity(requirements, style.affinity)},
        "priorityClassName": "system-node-critical",
        "serviceAccountName": style.service_account,
        "hostPID": True,
        "initContainers": [driver_manager_init(ctx, spec.manager, gpu_pod_eviction=True, extra_env=_manager_env(spec))],
        "containers": containers,
        "volumes": _volumes(spec),
    }
    secrets = _pull_secrets(ctx, module_sidecars)
    if secrets:
        pod["imagePullSecrets"] = secrets
    config_mounts(
        ctx,
        pool.os,
        precompiled=pool.precompiled,
        main=MAIN_CONTAINER,
        module_readers=[MAIN_CONTAINER, *([PEERMEM_CONTAINER] if spec.rdma.enabled else [])],
        builders=[MAIN_CONTAINER, *(sidecar.name for sidecar, _ in module_sidecars)],
    ).apply(pod)
    # Hashed before the shared transforms, as it always was: a digest that moves rolls every driver pod, and a
    # driver of its own is digested at the same point as the cluster's.
    digest = env(DIGEST_ENV, config_digest(pod, ctx.spec.host_paths.root_fs))
    for container in (pod["initContainers"][0], containers[0]):
        merge_env(container, [digest])
    return pod


def _finished(ctx: RenderContext, ds: Object, policy: DriverUpgradePolicy) -> Object:
    ds = finalize_daemonset(ctx, ds, section="driver", spec=ctx.spec.driver, main_container=MAIN_CONTAINER)
    ds["spec"]["updateStrategy"] = update_strategy(ctx.config, policy)
    return ds


def _daemonset(ctx: RenderContext, pool: DriverPool) -> Object:
    """A DaemonSet of the cluster's driver (NVIDIA's ClusterPolicy template); with drivers of their own beside it,
    off the nodes labelled for one of them."""
    labels = {
        "app": DAEMONSET,
        PRECOMPILED_LABEL: "true" if pool.precompiled else "false",
        "app.kubernetes.io/component": COMPONENT,
    }
    owned = (_NOT_OWNED,) if has_driver_groups(ctx.config) else ()
    ds = daemonset(
        ctx,
        pool.name,
        labels=labels,
        pod_spec=_pod(ctx, pool, _PodStyle(requirements=owned)),
        pod_annotations={"kubectl.kubernetes.io/default-container": MAIN_CONTAINER},
    )
    ds = _finished(ctx, ds, ctx.spec.driver.upgrade_policy)
    return ds


def _group_objects(ctx: RenderContext, group: DriverGroup, spec: NvidiaDriverSpec) -> tuple[list[Object], list[Object]]:
    """(RBAC, DaemonSets) of a driver of its own: one DaemonSet per node pool NVIDIA's controller would make."""
    group_ctx = RenderContext(ctx.config.model_copy(update={"operator": operator_with(ctx.spec, spec)}))
    affinity = spec.node_affinity.model_dump(mode="json", by_alias=True, exclude_defaults=True) \
        if spec.node_affinity else None
    rbac: list[Object] = []
    sets: list[Object] = []
    for pool in group_driver_pools(ctx.config, group, spec):
        account = driver_name(group.name, spec.driver_type, pool.os.tag)
        if all(obj["metadata"]["name"] != account for obj in rbac):
            labels = {STATE_LABEL: "state-driver"}
            rbac += [service_account(ctx, account, labels), cluster_role(account, manager_rules(group_ctx, _RULES), labels),
                     cluster_role_binding(ctx, account, labels=labels)]
        style = _PodStyle(account, ANTI_AFFINITY_COMPONENTS, affinity=affinity)
        ds = daemonset(
            group_ctx,
            pool.name,
            labels=daemonset_labels(pool, COMPONENT),
            pod_spec=_pod(group_ctx, pool, style),
            pod_annotations={"kubectl.kubernetes.io/default-container": MAIN_CONTAINER},
        )
        ds = _finished(group_ctx, ds, spec.upgrade_policy)
        shape_pod(ds, group.name, spec, group.pools, MAIN_CONTAINER)
        sets.append(ds)
    return rbac, sets


def _startup_probe_config_map(ctx: RenderContext) -> Object:
    labels = {"app": DAEMONSET, "app.kubernetes.io/component": COMPONENT}
    return config_map(ctx, STARTUP_PROBE_CONFIG_MAP, {_SCRIPT_KEY: startup_probe_script()}, labels=labels)


def _pools(ctx: RenderContext) -> list[DriverPool]:
    if ctx.spec.driver.use_nvidia_driver_crd:
        return []
    return driver_pools(
        DAEMONSET,
        ctx.config.cluster.operating_systems,
        ctx.spec.driver.use_precompiled,
        compile_unlisted=ctx.config.cluster.unlisted_kernels == "compile",
    )


def _package_config_maps(ctx: RenderContext, daemonsets: list[Object]) -> list[Object]:
    """The repoConfig/certConfig ConfigMaps whose files the config gives, when a driver installs packages."""
    if all(ds["metadata"]["labels"][PRECOMPILED_LABEL] == "true" for ds in daemonsets):
        return []
    labels = {"app": DAEMONSET, "app.kubernetes.io/component": COMPONENT}
    return [
        config_map(ctx, name, files, labels=labels)
        for _, name, files in package_files(ctx)
        if isinstance(files, dict)
    ]


def render(ctx: RenderContext) -> list[Object]:
    if not ctx.spec.driver.enabled:
        return []
    cluster = [_daemonset(ctx, pool) for pool in _pools(ctx)]
    groups = [_group_objects(ctx, group, spec) for group, spec in driver_groups(ctx.config)]
    daemonsets = [*cluster, *(ds for _, sets in groups for ds in sets)]
    cluster_rbac = [service_account(ctx, NAME), cluster_role(NAME, manager_rules(ctx, _RULES)),
                    cluster_role_binding(ctx, NAME)] if cluster else []
    return [
        *cluster_rbac,
        *(obj for rbac, _ in groups for obj in rbac),
        _startup_probe_config_map(ctx),
        *_package_config_maps(ctx, daemonsets),
        *daemonsets,
    ]
