"""Rules about DRA that span the `dra`, `pools`, `aks` and `operator` sections.

DRA deploys but never works when the cluster is older than the DRA driver's prerequisites (Kubernetes 1.34.2;
below 1.34 no `resource.k8s.io/v1` is served), when the NVIDIA driver is older than it supports (R565 for GPUs,
570.158.01 for ComputeDomains, whose plugin refuses to start on older drivers), or when the same GPUs are advertised
twice, by the device plugin and by DRA, so pods are over-admitted. The driver floors are checked per pool, against
the driver each pool runs (:mod:`gpu_operator.config.driver_compat_checks`). A claim template's own rules (a selector naming
an attribute the driver does not publish, which makes every claim that uses it unschedulable, ...) are the ones
`gpu-operator dra match` applies (:mod:`gpu_operator.config.dra_claims`); here the config around it: the classes
the chart creates and the feature gates it turns on. Each rule names the key and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.dra import ClaimTemplate, dra_node_pools, dra_wanted
from gpu_operator.config.dra_claims import claim_problems
from gpu_operator.config.errors import Problem
from gpu_operator.facts.dra_driver import MIN_KUBERNETES, device_class

__all__ = ["DRA_CHECKS", "driver_version", "kubernetes_versions"]

Check = Callable[[GpuStackConfig], Iterator[Problem]]

_KUBERNETES = re.compile(r"^v?1\.(\d+)(?:\.(\d+))?")
_DRIVER = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_MIN_TEXT = ".".join(map(str, MIN_KUBERNETES))


def _too_old(version: str) -> bool:
    """Whether a Kubernetes version is below the driver's floor; `1.34` (a minor, whose newest patch a managed
    cluster runs) counts as new enough."""
    match = _KUBERNETES.match(version)
    if match is None:
        return False
    minor, patch = int(match.group(1)), match.group(2)
    return (1, minor) < MIN_KUBERNETES[:2] or (
        (1, minor) == MIN_KUBERNETES[:2] and patch is not None and int(patch) < MIN_KUBERNETES[2])


def driver_version(version: str) -> tuple[int, int, int] | None:
    """An NVIDIA driver version (`570.158.01`, `565`) as numbers; None for a tag that is no version (`latest`)."""
    match = _DRIVER.match(version)
    if match is None:
        return None
    return (int(match.group(1)), int(match.group(2) or 0), int(match.group(3) or 0))


def kubernetes_versions(doc: GpuStackConfig) -> list[tuple[str, str]]:
    """(key, version) of every place the config states the Kubernetes version DRA nodes run."""
    found: list[tuple[str, str]] = []
    if doc.dra.kubernetes_version is not None:
        found.append(("dra.kubernetesVersion", doc.dra.kubernetes_version))
    if doc.aks is not None and doc.aks.kubernetes_version is not None:
        found.append(("aks.kubernetesVersion", doc.aks.kubernetes_version))
    for index, pool in enumerate(doc.pools):
        if pool.gpu_allocation == "dra" and pool.orchestrator_version is not None:
            found.append((f"pools[{index}].orchestratorVersion", pool.orchestrator_version))
    return found


def _needs_kubernetes_134(doc: GpuStackConfig) -> Iterator[Problem]:
    if not dra_wanted(doc.dra, doc.pools):
        return
    versions = kubernetes_versions(doc)
    if not versions:
        yield Problem("dra.kubernetesVersion", f"DRA needs Kubernetes {_MIN_TEXT} or newer (resource.k8s.io/v1) and "
                                               "the config does not say which version the cluster runs: set "
                                               "aks.kubernetesVersion, or dra.kubernetesVersion for a cluster the "
                                               "aks section does not describe")
    for key, version in versions:
        if _too_old(version):
            yield Problem(key, f"{version} is older than NVIDIA's DRA driver supports: it needs Kubernetes "
                               f"{_MIN_TEXT} or newer (its prerequisites); upgrade to {_MIN_TEXT} or later, or keep "
                               "the GPUs on the device plugin (gpuAllocation: devicePlugin, dra.enabled: false)")


def _one_allocator_per_pool(doc: GpuStackConfig) -> Iterator[Problem]:
    wanted = dra_wanted(doc.dra, doc.pools)
    for index, pool in enumerate(doc.pools):
        if pool.gpu_allocation != "dra":
            continue
        where = f"pools[{index}]"
        if not wanted:
            yield Problem(f"{where}.gpuAllocation", "dra needs the DRA driver and dra.enabled is false: remove "
                                                    "dra.enabled: false, or set gpuAllocation: devicePlugin")
        if pool.device_plugin_config is not None:
            yield Problem(f"{where}.devicePluginConfig", "a pool with gpuAllocation: dra runs no device plugin (its "
                                                         "GPUs would be advertised twice): remove devicePluginConfig, "
                                                         "or set gpuAllocation: devicePlugin")
        if pool.workload != "container":
            yield Problem(f"{where}.gpuAllocation", f"dra allocates GPUs to containers; a {pool.workload} pool "
                                                    "passes them to VMs: set gpuAllocation: devicePlugin here")
        if wanted and not doc.dra.gpus:
            yield Problem(f"{where}.gpuAllocation", "dra.gpus is false, so the DRA driver publishes no GPU and "
                                                    "this pool's GPUs could not be allocated at all: set dra.gpus: "
                                                    "true, or gpuAllocation: devicePlugin")
    if wanted and doc.dra.gpus and not doc.pools and doc.operator.device_plugin.enabled:
        yield Problem("operator.devicePlugin.enabled", "with DRA for GPUs and no pools to tell the nodes apart, the "
                                                       "device plugin would advertise the GPUs DRA allocates (pods "
                                                       "over-admitted): set operator.devicePlugin.enabled: false, "
                                                       "describe the pools (gpuAllocation: dra per pool), or set "
                                                       "dra.gpus: false for ComputeDomains only")
    selector = ((doc.dra.values.get("kubeletPlugin") or {}) if isinstance(doc.dra.values, dict) else {})
    if isinstance(selector, dict) and "nodeSelector" in selector:
        yield Problem("dra.values.kubeletPlugin.nodeSelector", "the kubelet plugin runs on the nodes labelled "
                                                               "nvidia.com/dra-kubelet-plugin=true, which the pools "
                                                               "with gpuAllocation: dra carry; choose pools there, "
                                                               "not with a node selector (a DRA plugin beside the "
                                                               "device plugin advertises GPUs twice)")


def _driver_root_once(doc: GpuStackConfig) -> Iterator[Problem]:
    """`dra.driverRoot` and the chart value it becomes (`nvidiaDriverRoot`) say one thing: the values, merged last,
    would silently win over the key the document names for it."""
    root, values = doc.dra.driver_root, doc.dra.values
    given = values.get("nvidiaDriverRoot") if isinstance(values, dict) else None
    if root is not None and isinstance(given, str) and given != root:
        yield Problem("dra.values.nvidiaDriverRoot", f"{given!r} contradicts dra.driverRoot {root!r}, and the chart "
                                                     "value would win: give the driver root once, as dra.driverRoot")


def _chart_namespace(doc: GpuStackConfig) -> Iterator[Problem]:
    if dra_wanted(doc.dra, doc.pools) and doc.dra.namespace == "default":
        yield Problem("dra.namespace", "the dra-driver-nvidia-gpu chart refuses the default namespace: use its own, "
                                       "e.g. dra-driver-nvidia-gpu")
    if dra_wanted(doc.dra, doc.pools) and not (doc.dra.gpus or doc.dra.compute_domains):
        yield Problem("dra.gpus", "dra.gpus and dra.computeDomains are both false: the driver would publish "
                                  "nothing; turn one on, or set dra.enabled: false")
    if dra_wanted(doc.dra, doc.pools) and doc.pools and not dra_node_pools(doc.dra, doc.pools):
        yield Problem("dra.enabled", "no pool runs the DRA kubelet plugin: set gpuAllocation: dra on a pool")


def _claim_templates(doc: GpuStackConfig) -> Iterator[Problem]:
    """Each template once, only with the DRA driver, the claim's own rules (:func:`claim_problems`, which `dra
    match` applies too), and the classes it asks for created by the chart this config installs."""
    templates = doc.dra.claim_templates
    if templates and not dra_wanted(doc.dra, doc.pools):
        yield Problem("dra.claimTemplates", "claim templates need the DRA driver: set dra.enabled: true or "
                                            "gpuAllocation: dra on a pool")
    switched = {"gpus": doc.dra.gpus, "computeDomains": doc.dra.compute_domains}
    seen: set[tuple[str, str]] = set()
    for t_index, template in enumerate(templates):
        base = f"dra.claimTemplates[{t_index}]"
        if (template.namespace, template.name) in seen:
            yield Problem(f"{base}.name", f"{template.namespace}/{template.name} is listed twice")
        seen.add((template.namespace, template.name))
        yield from claim_problems(template.spec, f"{base}.spec")
        for r_index, request in enumerate(template.spec.devices.requests):
            for below, exact in request.alternatives:
                cls = device_class(exact.device_class_name)
                if cls is not None and not switched[cls.resources]:
                    yield Problem(f"{base}.spec.devices.requests[{r_index}].{below}.deviceClassName",
                                  f"{cls.name} is created only with dra.{cls.resources}: true")
        yield from _sharing_gates(doc, base, template)


#: The driver's feature gate each sharing strategy needs (pkg/featuregates/featuregates.go, both off by default;
#: api/nvidia.com/resource/v1beta1 validate.go refuses the strategy while its gate is off).
_SHARING_GATES = {"TimeSlicing": "TimeSlicingSettings", "MPS": "MPSSupport"}


def _sharing_gates(doc: GpuStackConfig, base: str, template: ClaimTemplate) -> Iterator[Problem]:
    """A claim's opaque config uses a sharing strategy whose feature gate the chart turns on."""
    gates = doc.dra.values.get("featureGates") if isinstance(doc.dra.values, dict) else None
    for index, entry in enumerate(template.spec.devices.config):
        sharing = entry.opaque.parameters.sharing
        if sharing is None:
            continue
        gate = _SHARING_GATES[sharing.strategy]
        if not (isinstance(gates, dict) and gates.get(gate) is True):
            yield Problem(f"{base}.spec.devices.config[{index}].opaque.parameters.sharing.strategy",
                          f"{sharing.strategy} needs the DRA driver's {gate} feature gate, off by default (the "
                          f"kubelet plugin refuses the claim): set dra.values.featureGates.{gate}: true")


DRA_CHECKS: tuple[Check, ...] = (
    _needs_kubernetes_134,
    _one_allocator_per_pool,
    _driver_root_once,
    _chart_namespace,
    _claim_templates,
)
