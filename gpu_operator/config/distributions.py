"""Per-distribution facts the driver container depends on, keyed by os-release ID.

The driver image installs packages at start-up: extra repositories (`driver.repoConfig`) and CA certificates
(`driver.certConfig`) must land where the distribution's package manager and trust store look for them. A
distribution missing here cannot take those settings; config validation says so before anything renders.
"""

from __future__ import annotations

__all__ = ["REPO_CONFIG_DIRS", "CERT_CONFIG_DIRS"]

#: Where each distribution's package manager reads repository files (repoConfig).
REPO_CONFIG_DIRS: dict[str, str] = {
    "centos": "/etc/yum.repos.d",
    "rhcos": "/etc/yum.repos.d",
    "rhel": "/etc/yum.repos.d",
    "debian": "/etc/apt/sources.list.d",
    "ubuntu": "/etc/apt/sources.list.d",
    "sles": "/etc/zypp/repos.d",
    "sl-micro": "/etc/zypp/repos.d",
}

#: Where each distribution looks for extra CA certificates (certConfig).
CERT_CONFIG_DIRS: dict[str, str] = {
    "centos": "/etc/pki/ca-trust/extracted/pem",
    "rhcos": "/etc/pki/ca-trust/extracted/pem",
    "rhel": "/etc/pki/ca-trust/extracted/pem",
    "debian": "/usr/local/share/ca-certificates",
    "ubuntu": "/usr/local/share/ca-certificates",
    "sles": "/etc/pki/trust/anchors",
    "sl-micro": "/etc/pki/trust/anchors",
}
