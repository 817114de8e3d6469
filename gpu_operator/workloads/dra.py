"""ResourceClaims for NVIDIA's DRA driver: GPUs chosen by attributes, shared claims, pods and ComputeDomains.

A pod that gets GPUs through DRA names claims instead of counting `nvidia.com/gpu`:

* a :func:`claim_template` (ResourceClaimTemplate) gives every pod its own claim, made from the template;
* a :func:`resource_claim` (ResourceClaim) is one allocation that every pod and container naming it shares;
* a request selects devices of one DeviceClass (`gpu.nvidia.com`, `mig.nvidia.com`, ...) with CEL selectors
  (:class:`Selectors` builds the common ones: product, memory, MIG profile, architecture, driver version), and a
  constraint (`same_pcie_root`) makes the devices of a claim share one attribute's value;
* :func:`pod` lists the claims in `spec.resourceClaims` and each container's in `resources.claims`;
* :func:`compute_domain` is a multi-node NVLink ComputeDomain (`resource.nvidia.com/v1beta1`): the driver creates
  the ResourceClaimTemplate its channel is claimed through, named in the ComputeDomain.

Every selector is checked against the attributes the driver publishes for the request's DeviceClass before an
object is returned; a bad argument raises :class:`~gpu_operator.config.ConfigError` naming it and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gpu_operator.config.errors import ConfigError, Problem
from gpu_operator.facts.dra_cel import check_expression, parse_quantity
from gpu_operator.facts.dra_driver import DEVICE_CLASSES, GPU_DRIVER, STANDARD_DOMAIN, device_class

__all__ = [
    "API_VERSION",
    "PCIE_ROOT",
    "PodClaim",
    "Request",
    "Selectors",
    "claim_spec",
    "claim_template",
    "compute_domain",
    "pod",
    "resource_claim",
]

API_VERSION = "resource.k8s.io/v1"
#: The standard attribute of the PCIe root complex a device sits under.
PCIE_ROOT = f"{STANDARD_DOMAIN}/pcieRoot"
_ATTR = f"device.attributes['{GPU_DRIVER}']"


class Selectors:
    """CEL selectors over the attributes the GPU plugin publishes (full GPUs and MIG devices)."""

    @staticmethod
    def product(contains: str) -> str:
        """The product name contains this text, case-insensitively (`h100` matches `NVIDIA H100 80GB HBM3`)."""
        return f"{_ATTR}.productName.lowerAscii().contains({_quote(contains.lower())})"

    @staticmethod
    def min_memory(quantity: str) -> str:
        """At least this much memory (`80G`; note that an 80 GB GPU has less than `80Gi`)."""
        parse_quantity(quantity)
        return f"device.capacity['{GPU_DRIVER}'].memory.compareTo(quantity({_quote(quantity)})) >= 0"

    @staticmethod
    def mig_profile(profile: str) -> str:
        """A MIG device of this profile (`1g.10gb`); use with the `mig.nvidia.com` DeviceClass."""
        return f"{_ATTR}.profile == {_quote(profile)}"

    @staticmethod
    def architecture(name: str) -> str:
        """GPUs of this architecture as the driver names it (`Hopper`, `Ampere`, `Blackwell`)."""
        return f"{_ATTR}.architecture == {_quote(name)}"

    @staticmethod
    def min_driver_version(version: str) -> str:
        """A driver of at least this version (`580.0.0`)."""
        return f"{_ATTR}.driverVersion.compareTo(semver({_quote(version)})) >= 0"


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class Request:
    """One request of a claim: `count` devices (or all, with `count=None`) of a DeviceClass passing `selectors`."""

    name: str
    device_class: str = "gpu.nvidia.com"
    count: int | None = 1
    selectors: tuple[str, ...] = ()

    def manifest(self, where: str) -> dict[str, Any]:
        cls = device_class(self.device_class)
        if cls is None:
            raise ConfigError([Problem(f"{where}.device_class", f"{self.device_class!r} is not a DeviceClass of "
                                       f"NVIDIA's DRA driver: use one of {', '.join(c.name for c in DEVICE_CLASSES)}")])
        problems = [Problem(f"{where}.selectors[{index}]", message)
                    for index, expression in enumerate(self.selectors)
                    for message in check_expression(expression, [cls.facts])]
        if self.count is not None and self.count < 1:
            problems.append(Problem(f"{where}.count", "must be 1 or more, or None for every matching device"))
        if problems:
            raise ConfigError(problems, "DRA request")
        exactly: dict[str, Any] = {"deviceClassName": self.device_class}
        if self.selectors:
            exactly["selectors"] = [{"cel": {"expression": expression}} for expression in self.selectors]
        if self.count is None:
            exactly["allocationMode"] = "All"
        else:
            exactly["allocationMode"] = "ExactCount"
            exactly["count"] = self.count
        return {"name": self.name, "exactly": exactly}


def claim_spec(requests: Sequence[Request], *, same_pcie_root: bool = False,
               match_attributes: Sequence[str] = ()) -> dict[str, Any]:
    """A ResourceClaimSpec; `same_pcie_root` keeps every GPU of the claim under one PCIe root complex."""
    if not requests:
        raise ConfigError([Problem("requests", "a claim needs at least one Request")], "DRA claim")
    names = [request.name for request in requests]
    if len(set(names)) != len(names):
        raise ConfigError([Problem("requests", f"request names must differ: {', '.join(names)}")], "DRA claim")
    devices: dict[str, Any] = {"requests": [r.manifest(f"requests[{i}]") for i, r in enumerate(requests)]}
    attributes = [*([PCIE_ROOT] if same_pcie_root else []), *match_attributes]
    if attributes:
        devices["constraints"] = [{"requests": names, "matchAttribute": attribute} for attribute in attributes]
    return {"devices": devices}


def _metadata(name: str, namespace: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    return meta


def claim_template(name: str, namespace: str, requests: Sequence[Request], *, same_pcie_root: bool = False,
                   match_attributes: Sequence[str] = ()) -> dict[str, Any]:
    """A ResourceClaimTemplate: each pod that names it gets its own claim, with these requests."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": _metadata(name, namespace),
        "spec": {"spec": claim_spec(requests, same_pcie_root=same_pcie_root, match_attributes=match_attributes)},
    }


def resource_claim(name: str, namespace: str, requests: Sequence[Request], *, same_pcie_root: bool = False
                   ) -> dict[str, Any]:
    """A ResourceClaim: one allocation shared by every pod and container that names it."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaim",
        "metadata": _metadata(name, namespace),
        "spec": claim_spec(requests, same_pcie_root=same_pcie_root),
    }


@dataclass(frozen=True)
class PodClaim:
    """A claim as a pod names it: from a template (a claim per pod) or an existing ResourceClaim (shared)."""

    name: str
    source: Literal["template", "claim"]
    reference: str
    containers: tuple[str, ...] = field(default=())


def pod(name: str, namespace: str, image: str, claims: Sequence[PodClaim], *, containers: Sequence[str] = ("main",),
        command: Sequence[str] = ("nvidia-smi", "-L"), tolerations: Sequence[Mapping[str, str]] = (),
        node_selector: Mapping[str, str] | None = None, restart_policy: str = "Never") -> dict[str, Any]:
    """A pod whose containers use the claims; a claim without `containers` goes to every container."""
    problems = [Problem(f"claims[{i}].containers", f"{unknown!r} is not one of the containers "
                                                   f"({', '.join(containers)})")
                for i, claim in enumerate(claims) for unknown in claim.containers if unknown not in containers]
    if problems:
        raise ConfigError(problems, "DRA pod")
    spec: dict[str, Any] = {
        "restartPolicy": restart_policy,
        "resourceClaims": [
            {"name": claim.name,
             ("resourceClaimTemplateName" if claim.source == "template" else "resourceClaimName"): claim.reference}
            for claim in claims
        ],
        "containers": [
            {
                "name": container,
                "image": image,
                "command": list(command),
                "resources": {"claims": [{"name": claim.name} for claim in claims
                                         if not claim.containers or container in claim.containers]},
            }
            for container in containers
        ],
    }
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _metadata(name, namespace), "spec": spec}


def compute_domain(name: str, namespace: str, channel_template: str, *, all_channels: bool = False
                   ) -> dict[str, Any]:
    """A ComputeDomain: the driver runs an IMEX daemon on each node of the workload and creates the
    ResourceClaimTemplate `channel_template`, through which each pod claims its IMEX channel."""
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": _metadata(name, namespace),
        "spec": {
            "numNodes": 0,
            "channel": {
                "resourceClaimTemplate": {"name": channel_template},
                "allocationMode": "All" if all_channels else "Single",
            },
        },
    }
