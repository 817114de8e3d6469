"""How the toolkit container reaches the container runtime's config files and socket on the host.

The toolkit edits the runtime's config (containerd, CRI-O or docker) and signals the runtime to reload. Every path
it is given in `toolkit.env` (`CONTAINERD_CONFIG`, `CONTAINERD_SOCKET`, `RUNTIME_CONFIG`,
`RUNTIME_DROP_IN_CONFIG`, ...) is a **host** path. NVIDIA's operator mounts the parent directory of each one at a
fixed place in the container and rewrites the variable to the in-container path:

* top-level config: volume `<runtime>-config` (DirectoryOrCreate) at `/runtime/config-dir/`; `RUNTIME_CONFIG`
  and `<RUNTIME>_CONFIG` rewritten;
* drop-in config (not docker): volume `<runtime>-drop-in-config` (DirectoryOrCreate) at `/runtime/config-dir.d/`;
  `RUNTIME_DROP_IN_CONFIG` rewritten, the host path kept in `RUNTIME_DROP_IN_CONFIG_HOST_PATH`;
* socket (not CRI-O): volume `<runtime>-socket` at `/runtime/sock-dir/`; `RUNTIME_SOCKET` and `<RUNTIME>_SOCKET`
  rewritten.

`RUNTIME_CONFIG_SOURCE` entries `file=<host path>` become `file=/host<host path>` (the host root is mounted at
`/host`). With the NRI plugin the toolkit leaves the runtime config alone: only the NRI socket's directory is
mounted (at `/runtime/nri-sock-dir/`, volume `nri-socket`) and `NRI_SOCKET` points into it.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from gpu_operator.render.context import RenderContext
from gpu_operator.render.k8s import Object, env, host_path, mount
from gpu_operator.render.transforms import merge_env

__all__ = ["RuntimePaths", "RUNTIME_PATHS", "configure_runtime", "host_config_sources"]

CONFIG_DIR = "/runtime/config-dir/"
DROP_IN_DIR = "/runtime/config-dir.d/"
SOCKET_DIR = "/runtime/sock-dir/"
NRI_SOCKET_DIR = "/runtime/nri-sock-dir/"
DEFAULT_NRI_SOCKET = "/var/run/nri/nri.sock"


@dataclass(frozen=True)
class RuntimePaths:
    """A runtime's env names and default host paths (None: the runtime has no such file)."""

    config_env: str
    config: str
    drop_in: str | None
    socket_env: str | None
    socket: str | None


RUNTIME_PATHS: dict[str, RuntimePaths] = {
    "containerd": RuntimePaths(
        "CONTAINERD_CONFIG", "/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml",
        "CONTAINERD_SOCKET", "/run/containerd/containerd.sock",
    ),
    "crio": RuntimePaths("CRIO_CONFIG", "/etc/crio/config.toml", "/etc/crio/crio.conf.d/99-nvidia.conf", None, None),
    "docker": RuntimePaths("DOCKER_CONFIG", "/etc/docker/daemon.json", None, "DOCKER_SOCKET", "/var/run/docker.sock"),
}


def _value(container: Object, name: str) -> str:
    """The literal value of env var `name`, "" when unset (as NVIDIA's getContainerEnv)."""
    return next((e.get("value", "") for e in container.get("env", []) if e["name"] == name), "")


def _dir_and_file(path: str) -> tuple[str, str]:
    return posixpath.split(posixpath.normpath(path))


def _mount_dir(pod: Object, container: Object, name: str, host_file: str, target: str, type_: str | None) -> str:
    """Mount `host_file`'s directory at `target`; return the file's path inside the container."""
    directory, file_name = _dir_and_file(host_file)
    container.setdefault("volumeMounts", []).append(mount(name, target))
    pod.setdefault("volumes", []).append(host_path(name, directory, type_))
    return target + file_name


def host_config_sources(sources: str) -> str:
    """Rewrite `file=<host path>` entries of RUNTIME_CONFIG_SOURCE to their path under `/host`."""
    rewritten = []
    for source in sources.split(","):
        kind, separator, location = source.partition("=")
        if separator and kind == "file":
            source = "file=" + posixpath.normpath(f"/host/{location}")
        rewritten.append(source)
    return ",".join(rewritten)


def _config_files(ctx: RenderContext, pod: Object, container: Object, paths: RuntimePaths) -> None:
    config = _value(container, paths.config_env) or _value(container, "RUNTIME_CONFIG") or paths.config
    in_container = _mount_dir(pod, container, f"{ctx.runtime}-config", config, CONFIG_DIR, "DirectoryOrCreate")
    merge_env(container, [env("RUNTIME_CONFIG", in_container), env(paths.config_env, in_container)])
    if paths.drop_in is None:
        return
    drop_in = _value(container, "RUNTIME_DROP_IN_CONFIG") or paths.drop_in
    in_container = _mount_dir(
        pod, container, f"{ctx.runtime}-drop-in-config", drop_in, DROP_IN_DIR, "DirectoryOrCreate"
    )
    merge_env(container, [
        env("RUNTIME_DROP_IN_CONFIG", in_container), env("RUNTIME_DROP_IN_CONFIG_HOST_PATH", drop_in),
    ])


def _config_sources(container: Object) -> None:
    sources = _value(container, "RUNTIME_CONFIG_SOURCE")
    if sources:
        merge_env(container, [env("RUNTIME_CONFIG_SOURCE", host_config_sources(sources))])


def _socket(ctx: RenderContext, pod: Object, container: Object, paths: RuntimePaths) -> None:
    if paths.socket_env is None or paths.socket is None:
        return
    socket = _value(container, paths.socket_env) or paths.socket
    in_container = _mount_dir(pod, container, f"{ctx.runtime}-socket", socket, SOCKET_DIR, None)
    merge_env(container, [env("RUNTIME_SOCKET", in_container), env(paths.socket_env, in_container)])


def _nri_socket(pod: Object, container: Object) -> None:
    socket = _value(container, "NRI_SOCKET") or DEFAULT_NRI_SOCKET
    in_container = _mount_dir(pod, container, "nri-socket", socket, NRI_SOCKET_DIR, "DirectoryOrCreate")
    merge_env(container, [env("NRI_SOCKET", in_container)])


def configure_runtime(ctx: RenderContext, pod: Object, container: Object) -> None:
    """Set RUNTIME and the runtime's mounts/env on the toolkit `container` (after the user's env is merged)."""
    merge_env(container, [env("RUNTIME", ctx.runtime)])
    if ctx.nri_plugin:
        _nri_socket(pod, container)
        return
    if ctx.runtime == "containerd":
        merge_env(container, [env("CONTAINERD_RUNTIME_CLASS", ctx.spec.operator.runtime_class)])
    paths = RUNTIME_PATHS[ctx.runtime]
    _config_files(ctx, pod, container, paths)
    _config_sources(container)
    _socket(ctx, pod, container, paths)
