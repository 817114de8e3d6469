"""What a driver installation puts in a container, found under its root as NVIDIA's toolkit finds it.

`root` is where this process sees the driver root (the plugin's `/driver-root` mount, or `/`); every path found
is a host path under it, and a mount's container path is that path without the root. The lookups follow
nvidia-container-toolkit v1.20.2:

* the driver version is the suffix of the first `libcuda.so.*.*` (else `libnvidia-ml.so.*.*`) found in the
  library directories (internal/lookup/root/root.go, inferVersion), and the driver's library directories are
  those holding a `lib*.so.<version>` (updateInfo);
* libraries are looked up by glob in `/`, `/usr/lib64`, `/usr/lib/<arch>-linux-gnu` (and `.../nvidia/current`),
  `/lib64`, `/lib/<arch>-linux-gnu` under the root, symlinks resolved; when none matches, in the root's
  `/etc/ld.so.cache`: each 64-bit library it lists and the links it resolves through, matched by file name
  (pkg/lookup/library.go NewLibraryLocator, pkg/lookup/ldcache.go newLdcacheLocator), so a driver registered with
  `ldconfig` outside those directories is found; the driver's own libraries in its library directories and their
  `vdpau/` (pkg/nvcdi/driver-nvml.go, getVersionLibs);
* programs in the PATH directories (and `/usr/local/sbin` ... `/bin`) under the root, the first executable file
  (pkg/lookup/executable.go, path.go);
* firmware in `/lib/firmware/updates/<kernel>`, `/lib/firmware/updates`, `/lib/firmware/<kernel>`,
  `/lib/firmware` under the root, after the kernel's custom firmware path (driver-nvml.go,
  getFirmwareSearchPaths);
* configuration files (EGL, Vulkan, OpenCL, X11) in `/etc` and the XDG data directories under the root
  (internal/lookup/root/root.go, Configs);
* device nodes are only character devices (pkg/lookup/device.go), looked up under the dev root.

Candidates that are directories (or, for programs, not executable) are skipped, as NVIDIA's file filter does.
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob
import os
import platform
import posixpath
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpu_operator.agents.nvml.ld_cache import libraries_64

__all__ = [
    "LIBRARY_SEARCH_PATHS",
    "DEFAULT_PATH",
    "FIRMWARE_CLASS_PATH",
    "Found",
    "DriverRoot",
    "is_char_device",
    "link_chain",
]

LIBRARY_SEARCH_PATHS = (
    "/", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu/nvidia/current", "/usr/lib/aarch64-linux-gnu/nvidia/current",
    "/lib64", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
    "/lib/x86_64-linux-gnu/nvidia/current", "/lib/aarch64-linux-gnu/nvidia/current",
)
DEFAULT_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
#: The kernel's extra firmware directory (read on the node itself, not under the driver root).
FIRMWARE_CLASS_PATH = "/sys/module/firmware_class/parameters/path"
_VERSION_LIBRARIES = ("libcuda.so.", "libnvidia-ml.so.")


def _is_file(path: str) -> bool:
    return os.path.exists(path) and not os.path.isdir(path)


def _is_executable(path: str) -> bool:
    return _is_file(path) and bool(os.stat(path).st_mode & 0o111)


def is_char_device(path: str) -> bool:
    """A character device node itself (not a symlink to one), as NVIDIA's char-device filter requires."""
    try:
        return stat.S_ISCHR(os.lstat(path).st_mode)
    except OSError:
        return False


def link_chain(path: str) -> list[str]:
    """The path and each link it goes through to its file (symlinks.go ResolveChain); empty when one is broken."""
    chain: list[str] = []
    while path not in chain:
        if not os.path.lexists(path):
            return []
        chain.append(path)
        if not os.path.islink(path):
            break
        path = posixpath.normpath(posixpath.join(posixpath.dirname(path), os.readlink(path)))
    return chain


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _join(root: str, path: str) -> str:
    return posixpath.normpath(posixpath.join(root, path.lstrip("/")))


def glob_under(prefixes: Sequence[str], pattern: str, accept: Callable[[str], bool] = _is_file,
               count: int = 0) -> list[str]:
    """Matches of `pattern` under each prefix in turn (sorted per prefix), at most `count` when it is set."""
    found: list[str] = []
    for prefix in _unique(prefixes):
        for candidate in sorted(glob.glob(_join(prefix, pattern))):
            if accept(candidate):
                found.append(candidate)
                if count and len(found) == count:
                    return found
    return found


@dataclass(frozen=True, slots=True)
class Found:
    """A file to bind into the container: where it is (`host_path`) and where it goes (`container_path`)."""

    host_path: str
    container_path: str


@dataclass
class DriverRoot:
    """The driver installation under `root` (as this process sees it); `environ` supplies PATH and XDG_DATA_DIRS."""

    root: str = "/"
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    firmware_class_path: str = FIRMWARE_CLASS_PATH
    kernel_release: str = field(default_factory=platform.release)
    _version: str | None = field(default=None, init=False, repr=False)
    _library_dirs: list[str] | None = field(default=None, init=False, repr=False)
    _cached: list[str] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.root = posixpath.normpath(posixpath.join("/", self.root))

    # -- paths -------------------------------------------------------------------------------------------------

    def under(self, path: str) -> str:
        """`path` (absolute, as on the host) under the root."""
        return _join(self.root, path)

    def relative(self, path: str) -> str:
        """A path under the root as the container sees it."""
        if self.root == "/":
            return path
        return "/" + posixpath.relpath(path, self.root) if path.startswith(self.root + "/") else path

    def found(self, paths: Iterable[str]) -> list[Found]:
        return [Found(p, self.relative(p)) for p in _unique(paths)]

    # -- libraries ---------------------------------------------------------------------------------------------

    def libraries(self, pattern: str) -> list[str]:
        """Libraries whose file name matches `pattern` in the standard library directories, else in the ld.so.cache,
        symlinks resolved."""
        matches = glob_under([self.under(p) for p in LIBRARY_SEARCH_PATHS], pattern)
        if not matches:
            matches = [p for p in self.cached_libraries if fnmatch.fnmatchcase(posixpath.basename(p), pattern)]
        return _unique(os.path.realpath(m) for m in matches)

    @property
    def cached_libraries(self) -> list[str]:
        """The root's ld.so.cache's 64-bit libraries under the root, with the links each resolves through."""
        if self._cached is None:
            self._cached = _unique(link for path in libraries_64(self.root) for link in link_chain(self.under(path)))
        return self._cached

    @property
    def version(self) -> str:
        """The driver version (`580.159.04`); raises LookupError when no versioned libcuda or libnvidia-ml is found."""
        if self._version is None:
            for prefix in _VERSION_LIBRARIES:
                located = self.libraries(prefix + "*.*")
                if located:
                    version = posixpath.basename(located[0])[len(prefix):]
                    if version:
                        self._version = version
                        break
            else:
                raise LookupError(f"no libcuda.so.<version> or libnvidia-ml.so.<version> under {self.root} "
                                  f"(searched {', '.join(LIBRARY_SEARCH_PATHS)}): is the driver installed there?")
        return self._version

    @property
    def library_dirs(self) -> list[str]:
        """The directories (container paths) holding the driver's `lib*.so.<version>` files."""
        if self._library_dirs is None:
            located = self.libraries("lib*.so." + self.version)
            self._library_dirs = _unique(self.relative(posixpath.dirname(p)) for p in located)
        return self._library_dirs

    def driver_libraries(self, pattern: str, *extra_dirs: str) -> list[str]:
        """Files matching `pattern` in the driver's library directories (and their `extra_dirs`), resolved."""
        dirs = list(self.library_dirs)
        for extra in extra_dirs:
            dirs += [extra] if extra.startswith("/") else [posixpath.join(d, extra) for d in self.library_dirs]
        matches = glob_under([self.under(d) for d in dirs], pattern)
        return _unique(os.path.realpath(m) for m in matches)

    # -- programs, firmware, sockets, configuration ------------------------------------------------------------

    def program(self, name: str) -> list[str]:
        """The first executable `name` in the PATH directories under the root."""
        dirs = [d for d in self.environ.get("PATH", "").split(":") if d]
        dirs += [d for d in DEFAULT_PATH if d not in dirs]
        return glob_under([self.under(d) for d in dirs], name, _is_executable, count=1)

    def firmware(self, pattern: str) -> list[str]:
        """Firmware files matching `pattern` in the kernel's firmware search path under the root."""
        dirs: list[str] = []
        with contextlib.suppress(OSError):  # no custom firmware path: the kernel's default directories only
            custom = Path(self.firmware_class_path).read_text(encoding="utf-8").strip()
            dirs += [custom] if custom else []
        release = self.kernel_release
        dirs += [f"/lib/firmware/updates/{release}", "/lib/firmware/updates/", f"/lib/firmware/{release}",
                 "/lib/firmware/"]
        return glob_under([self.under(d) for d in dirs], pattern)

    def files(self, pattern: str, search: Sequence[str] = ("/",), count: int = 0) -> list[str]:
        """Files matching `pattern` in `search` directories under the root."""
        return glob_under([self.under(d) for d in search], pattern, count=count)

    @property
    def config_dirs(self) -> list[str]:
        data = [d for d in self.environ.get("XDG_DATA_DIRS", "").split(":") if d]
        return ["/etc", *(data or ["/usr/local/share", "/usr/share"])]
