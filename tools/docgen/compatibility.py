"""The compatibility matrix page, from the versions the code pins.

Each row reads the constant the code uses: the GPU Operator release whose chart defaults and manifests are
mirrored, the charts installed beside it (Network Operator, Node Feature Discovery, NVIDIA's DRA driver), the
Kubernetes versions the objects are validated for and the e2e tier runs, the DRA driver's prerequisites, the Pulumi
SDK ranges of the distribution and the e2e pins, and every default operand image (the driver's version included).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from gpu_operator import UPSTREAM_OPERATOR_VERSION
from gpu_operator.aks.node_images import UBUNTU_2404_FROM
from gpu_operator.config.clusterpolicy.spec import ClusterPolicySpec
from gpu_operator.config.document import NFD_CHART
from gpu_operator.config.network import NETWORK_CHART, NetworkSpec
from gpu_operator.facts import dra_driver

__all__ = ["default_images", "page"]

REPO = Path(__file__).resolve().parents[2]
_E2E_BUILD = REPO / "tools" / "e2e" / "build.sh"
_E2E_CONSTRAINTS = REPO / "tools" / "e2e" / "constraints.txt"
_PULUMI = re.compile(r"^(pulumi[a-z-]*)\s*([<>=!~].*)$")


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def default_images(section: object, path: str) -> list[tuple[str, str]]:
    """(key, `repository/image:version`) of every image a section's defaults name, depth first."""
    found: list[tuple[str, str]] = []
    image, repository, version = (getattr(section, key, "") for key in ("image", "repository", "version"))
    if isinstance(image, str) and image:
        reference = f"{repository}/{image}" if repository else image
        found.append((path, f"{reference}:{version}" if version else reference))
    for name, field in type(section).model_fields.items():  # type: ignore[attr-defined]
        value = getattr(section, name)
        if hasattr(type(value), "model_fields"):
            found += default_images(value, f"{path}.{field.alias or name}")
    return found


def _driver_version(version: tuple[int, ...]) -> str:
    """NVIDIA writes the minor and patch of a driver version with two digits at least: 570.158.01."""
    major, *rest = version
    return ".".join([str(major), *(f"{part:02d}" for part in rest)])


def _e2e_version(name: str) -> str:
    match = re.search(rf"^{name}=(\S+)$", _E2E_BUILD.read_text(encoding="utf-8"), re.MULTILINE)
    return match.group(1) if match else "?"


def _pulumi_pins() -> list[tuple[str, str, str]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    ranges = {}
    for requirement in project["dependencies"]:
        match = _PULUMI.match(requirement.split(";")[0].strip())
        if match:
            ranges[match.group(1)] = match.group(2)
    pins = {}
    for line in _E2E_CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.strip()] = version.strip()
    return [(name, spec, pins.get(name, "-")) for name, spec in ranges.items()]


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return [*lines, ""]


def page() -> str:
    """The Markdown of docs/reference/compatibility.md."""
    from tests.support.schemas import KUBERNETES_VERSIONS

    driver = ClusterPolicySpec().driver
    software = [
        ("NVIDIA GPU Operator (chart defaults, manifests, upgrade rules)", UPSTREAM_OPERATOR_VERSION,
         "`gpu_operator.UPSTREAM_OPERATOR_VERSION`"),
        ("NVIDIA GPU driver (default)", driver.version, "`operator.driver.version`"),
        ("NVIDIA Network Operator chart", NETWORK_CHART.version, "`network.chartVersion`"),
        ("DOCA-OFED driver container (default)", NetworkSpec().ofed_driver.image.version,
         "`network.ofedDriver.image.version`"),
        ("Node Feature Discovery chart", NFD_CHART.version, "`nfd.chartVersion`"),
        ("NVIDIA DRA driver chart", dra_driver.CHART.version, "pinned"),
    ]
    kubernetes = [
        ("objects validated against the schemas of", ", ".join(KUBERNETES_VERSIONS)),
        ("e2e tier (API server, scheduler, KWOK)", _e2e_version("K8S_VERSION")),
        ("DRA (`gpuAllocation: dra`)", f"{_dotted(dra_driver.MIN_KUBERNETES)} or later"),
        ("AKS `osSKU: Ubuntu` node image", f"Ubuntu 22.04 up to 1.{UBUNTU_2404_FROM - 1}, 24.04 from "
                                           f"1.{UBUNTU_2404_FROM}"),
    ]
    drivers = [
        ("GPU allocation through DRA", f"R{dra_driver.MIN_DRIVER_BRANCH} or later"),
        ("DRA ComputeDomains", f"{_driver_version(dra_driver.MIN_COMPUTE_DOMAIN_DRIVER)} or later"),
    ]
    lines = [
        "# Compatibility matrix",
        "",
        "<!-- generated by tools/docgen/compatibility.py from the versions the code pins; do not edit -->",
        "",
        "The versions this release is built and tested against, read from the constants the code uses.",
        "",
        "## Software",
        "",
        *_table(("What", "Version", "Setting"), software),
        "## Kubernetes",
        "",
        *_table(("What", "Versions"), kubernetes),
        "## NVIDIA drivers",
        "",
        *_table(("Feature", "Driver"), drivers),
        "## Pulumi",
        "",
        "The distribution's ranges (`pyproject.toml`), and the versions the e2e tier runs under a real engine "
        f"(CLI and language hosts {_e2e_version('PULUMI_VERSION')}, Kubernetes provider "
        f"{_e2e_version('K8S_PROVIDER_VERSION')}).",
        "",
        *_table(("SDK", "Range", "e2e tier"), _pulumi_pins()),
        "## Default operand images",
        "",
        "What each `operator` section runs when the config names no other image (NVIDIA's chart defaults; "
        "`gpu-operator images` lists what a given config pulls).",
        "",
        *_table(("Key", "Image"), [(f"`{key}`", f"`{image}`")
                                   for key, image in [*default_images(ClusterPolicySpec(), "operator"),
                                                      *default_images(NetworkSpec(), "network")]]),
    ]
    return "\n".join(lines).rstrip() + "\n"
