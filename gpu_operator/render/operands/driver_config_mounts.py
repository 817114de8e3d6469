"""The driver pod's optional configuration: what the `driver` section adds to the pod when set.

* `licensingConfig` (vGPU guests): `gridd.conf`, plus the NLS client token when `nlsEnabled`, under `/drivers`;
* `virtualTopology.config`: the vGPU topology daemon's `/etc/nvidia/nvidia-topologyd.conf`;
* `kernelModuleConfig.name`: module parameter files under `/drivers` (driver and peermem containers);
* for containers that install packages, unless the driver is precompiled: `repoConfig` and `certConfig` at the
  OS's repository and CA directories, `secretEnv` as `envFrom`, and the host's RHEL/SUSE subscription files
  (not RHEL's when a repoConfig gives the repositories, as NVIDIA skips them: an unsubscribed host lacks them).

NVIDIA reads the repoConfig/certConfig/kernelModuleConfig ConfigMaps from the cluster and mounts each key as a
file (`subPath`, keys sorted), so the image's own repository files and CA bundle stay beside them. A render
cannot read them: the repoConfig and certConfig keys come from `configs.driverRepoConfig` /
`configs.driverCertConfig` (the files we create the ConfigMap with, or the keys of an existing one), and
kernelModuleConfig is mounted as the four parameter files the driver container reads (`nvidia.conf`,
`nvidia-uvm.conf`, `nvidia-modeset.conf`, `nvidia-peermem.conf`); keys the ConfigMap lacks are skipped
(`optional`), and the driver ignores a parameter file that is not a file.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from collections.abc import Iterable

from gpu_operator.config.cluster import NodeOperatingSystem
from gpu_operator.config.distributions import CERT_CONFIG_DIRS, REPO_CONFIG_DIRS
from gpu_operator.config.clusterpolicy.driver import DriverSpec
from gpu_operator.render.context import RenderContext
from gpu_operator.render.k8s import Object, config_map_volume, host_path, mount
from gpu_operator.render.transforms import containers_of

__all__ = ["ConfigMounts", "config_mounts", "package_files", "MODULE_PARAMETER_FILES"]

_SUSE_CREDENTIALS = (
    ("/etc/SUSEConnect", "/etc/SUSEConnect", "FileOrCreate"),
    ("/etc/zypp/credentials.d", "/etc/zypp/credentials.d", "Directory"),
)
#: Host subscription files the driver container needs to install packages: (mount path, host path, type).
_SUBSCRIPTIONS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "rhel": (
        ("/run/secrets/etc-pki-entitlement", "/etc/pki/entitlement", "Directory"),
        ("/run/secrets/redhat.repo", "/etc/yum.repos.d/redhat.repo", "File"),
        ("/run/secrets/rhsm", "/etc/rhsm", "Directory"),
    ),
    "sles": _SUSE_CREDENTIALS,
    "sl-micro": _SUSE_CREDENTIALS,
}
MODULE_PARAMETER_FILES = ("nvidia.conf", "nvidia-uvm.conf", "nvidia-modeset.conf", "nvidia-peermem.conf")
_LICENSING_FILE = "gridd.conf"
_NLS_TOKEN_FILE = "client_configuration_token.tok"
_LICENSING_TARGETS = {
    _LICENSING_FILE: "/drivers/gridd.conf",
    _NLS_TOKEN_FILE: f"/drivers/ClientConfigToken/{_NLS_TOKEN_FILE}",
}
_TOPOLOGY_FILE = "nvidia-topologyd.conf"


@dataclass
class ConfigMounts:
    """Volumes to add to the pod and, per container name, the mounts and secret env to add to it."""

    volumes: list[Object] = field(default_factory=list)
    mounts: dict[str, list[Object]] = field(default_factory=dict)
    secret_env: dict[str, str] = field(default_factory=dict)

    def add(self, volume: Object, containers: Iterable[str], *mounts: Object) -> None:
        if all(v["name"] != volume["name"] for v in self.volumes):
            self.volumes.append(volume)
        for name in containers:
            self.mounts.setdefault(name, []).extend(mounts)

    def apply(self, pod: Object) -> None:
        pod.setdefault("volumes", []).extend(self.volumes)
        for container in containers_of(pod):
            container.setdefault("volumeMounts", []).extend(self.mounts.get(container["name"], []))
            if container["name"] in self.secret_env:
                container["envFrom"] = [{"secretRef": {"name": self.secret_env[container["name"]]}}]


def _os_dir(table: dict[str, str], os: NodeOperatingSystem, setting: str) -> str:
    if os.id not in table:
        raise ValueError(f"driver.{setting} is not supported on {os.id} (supported: {', '.join(sorted(table))})")
    return table[os.id]


def _licensing(spec: DriverSpec, main: str, out: ConfigMounts) -> None:
    licensing = spec.licensing_config
    if not (licensing.secret_name or licensing.config_map_name):
        return
    keys = [_LICENSING_FILE, *([_NLS_TOKEN_FILE] if licensing.nls_enabled else [])]
    items = [{"key": key, "path": key} for key in keys]
    source = (
        {"secret": {"secretName": licensing.secret_name, "items": items}}
        if licensing.secret_name
        else {"configMap": {"name": licensing.config_map_name, "items": items}}
    )
    targets = (mount("licensing-config", _LICENSING_TARGETS[key], read_only=True, sub_path=key) for key in keys)
    out.add({"name": "licensing-config", **source}, [main], *targets)


def _topology(spec: DriverSpec, main: str, out: ConfigMounts) -> None:
    if not spec.virtual_topology.config:
        return
    volume = config_map_volume("topology-config", spec.virtual_topology.config, items=[(_TOPOLOGY_FILE, _TOPOLOGY_FILE)])
    target = mount("topology-config", f"/etc/nvidia/{_TOPOLOGY_FILE}", read_only=True, sub_path=_TOPOLOGY_FILE)
    out.add(volume, [main], target)


def _module_parameters(spec: DriverSpec, readers: list[str], out: ConfigMounts) -> None:
    name = spec.kernel_module_config.name
    if not name:
        return
    volume = config_map_volume(name, name, items=[(key, key) for key in MODULE_PARAMETER_FILES])
    volume["configMap"]["optional"] = True
    targets = (mount(name, f"/drivers/{key}", read_only=True, sub_path=key) for key in MODULE_PARAMETER_FILES)
    out.add(volume, readers, *targets)


def package_files(ctx: RenderContext) -> list[tuple[str, str, dict[str, str] | tuple[str, ...]]]:
    """(setting, ConfigMap name, files) of the repoConfig and certConfig in use; files are contents or keys."""
    spec, configs = ctx.spec.driver, ctx.config.configs
    settings = (
        ("repoConfig", spec.repo_config.config_map_name, configs.driver_repo_config),
        ("certConfig", spec.cert_config.name, configs.driver_cert_config),
    )
    out = []
    for setting, name, files in settings:
        if not name:
            continue
        if files is None:
            section = "driverRepoConfig" if setting == "repoConfig" else "driverCertConfig"
            raise ValueError(f"driver.{setting} {name!r} needs its keys in configs.{section}")
        out.append((setting, name, files))
    return out


def _packages(ctx: RenderContext, os: NodeOperatingSystem, main: str, builders: list[str], out: ConfigMounts) -> None:
    spec = ctx.spec.driver
    tables = {"repoConfig": REPO_CONFIG_DIRS, "certConfig": CERT_CONFIG_DIRS}
    for setting, name, files in package_files(ctx):
        directory = _os_dir(tables[setting], os, setting)
        keys = sorted(files)
        targets = (mount(name, posixpath.join(directory, key), read_only=True, sub_path=key) for key in keys)
        out.add(config_map_volume(name, name, items=[(key, key) for key in keys]), builders, *targets)
    if spec.secret_env:
        out.secret_env.update({container: spec.secret_env for container in builders})
    # On CRI-O, RHEL hosts hand subscriptions to every container themselves; a repoConfig replaces them.
    if os.id == "rhel" and (ctx.runtime == "crio" or spec.repo_config.config_map_name):
        return
    for index, (target, source, type_) in enumerate(_SUBSCRIPTIONS.get(os.id, ())):
        volume = f"subscription-config-{index}"
        out.add(host_path(volume, source, type_), [main], mount(volume, target, read_only=True))


def config_mounts(
    ctx: RenderContext,
    os: NodeOperatingSystem,
    *,
    precompiled: bool,
    main: str,
    module_readers: list[str],
    builders: list[str],
) -> ConfigMounts:
    """Everything the `driver` section adds: `main` is the driver container, `module_readers` the containers
    that load kernel modules, `builders` those that install packages."""
    spec = ctx.spec.driver
    out = ConfigMounts()
    _licensing(spec, main, out)
    _topology(spec, main, out)
    _module_parameters(spec, module_readers, out)
    if not precompiled:
        _packages(ctx, os, main, builders, out)
    return out
