"""Listen addresses in Go's `net.Listen` spelling: `HOST:PORT`, `:PORT` (every interface) or `[IPv6]:PORT`.

dcgm-exporter takes `--address :9400`; the node status exporter is told only a port (`METRICS_PORT=8000`),
which means `:8000`. An empty host means every interface, IPv4 and IPv6 where the node has both.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ListenAddress", "parse_listen_address"]

_MAX_PORT = 65535


@dataclass(frozen=True, slots=True)
class ListenAddress:
    """Where to listen. `host` is empty for every interface; port 0 asks the kernel for a free port."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def _port(text: str, spec: str) -> int:
    if not text.isdigit() or int(text) > _MAX_PORT:
        raise ValueError(f"invalid listen address {spec!r}: port must be a number from 0 to {_MAX_PORT}")
    return int(text)


def parse_listen_address(spec: str) -> ListenAddress:
    """`:9400` -> ('', 9400); `127.0.0.1:9400`; `[::1]:9400`. Raises ValueError otherwise."""
    text = spec.strip()
    host, separator, port = text.rpartition(":")
    if not separator:
        raise ValueError(f"invalid listen address {spec!r}: expected HOST:PORT or :PORT")
    if host.startswith("["):
        if not host.endswith("]"):
            raise ValueError(f"invalid listen address {spec!r}: unclosed '['")
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"invalid listen address {spec!r}: IPv6 hosts go in brackets, e.g. [::1]:9400")
    return ListenAddress(host, _port(port, spec))
