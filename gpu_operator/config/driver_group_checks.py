"""Rules about drivers of their own (`drivers`, `pools[].driver`): every GPU node gets exactly one driver.

NVIDIA's operator refuses NVIDIADrivers that select one node twice (`internal/validator` `nodeSelectorValidator`,
`internal/nvidiadriver` `AssignOwners`: "multiple NVIDIADrivers match the same node"), a second default, a
default with a node selector, and a selector on its routing label. It finds out on the live nodes; a render sees
no node, so these rules refuse what could select a node twice:

* two node selectors that some node could satisfy both: unless they ask one key for different values;
* a pool whose nodes a driver's selector matches (the pool's own labels, AKS's `kubernetes.azure.com/agentpool`,
  `nvidia.com/gpu.present` and the NFD labels of its node image) while the pool names another driver, or none;
* a pool naming a driver whose selector its nodes do not satisfy (NVIDIA adds the selector to the DaemonSet's).

Then what would render a driver nobody gets, or one this package cannot render: a driver no pool names and no
selector or default picks, a name that cannot label a node, the vGPU host manager (that is `operator.vgpuManager`),
repository or certificate ConfigMaps whose files the config does not give. Each names the key and the fix. (Nodes a
selector matches run their driver once the operator controller labels them; without it the render says so,
:func:`gpu_operator.config.driver_groups.unlabelled_driver_notes`.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.driver_groups import (
    DEFAULT_DRIVER_NAME,
    DriverGroup,
    group_spec,
    pool_driver_name,
    written_groups,
)
from gpu_operator.config.effective import pool_operating_system
from gpu_operator.config.errors import Problem
from gpu_operator.config.node_metadata import AKS_LABEL_PREFIX, GPU_PRESENT_LABEL
from gpu_operator.config.nvidia_driver import NvidiaDriverSpec
from gpu_operator.config.pools import GpuPool
from gpu_operator.config.suggestions import did_you_mean
from gpu_operator.facts.kube_names import is_dns_label

__all__ = ["DRIVER_CONFLICT_CHECKS", "DRIVER_GROUP_CHECKS", "pool_known_labels", "selectors_may_overlap"]

Check = Callable[[GpuStackConfig], Iterator[Problem]]

_NFD_OS_ID = "feature.node.kubernetes.io/system-os_release.ID"
_NFD_OS_VERSION = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
#: The longest name whose DaemonSets and ServiceAccounts fit: a node label value holds 63 characters.
_MAX_NAME = 63


def pool_known_labels(doc: GpuStackConfig, pool: GpuPool) -> dict[str, str]:
    """The labels the pool's nodes are known to carry before they exist."""
    labels = {**pool.labels, f"{AKS_LABEL_PREFIX}agentpool": pool.name, GPU_PRESENT_LABEL: "true"}
    image = pool_operating_system(pool, doc.aks)
    if image is not None:
        labels.update({_NFD_OS_ID: image.id, _NFD_OS_VERSION: image.version_id})
    return labels


def selectors_may_overlap(first: dict[str, str], second: dict[str, str]) -> bool:
    """Whether one node could satisfy both equality selectors: unless a key both name asks for different values."""
    return all(first[key] == second[key] for key in first.keys() & second.keys())


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def _written_groups(doc: GpuStackConfig) -> list[DriverGroup]:
    return list(written_groups(doc)) if doc.operator.driver.enabled else []


def _driver_needs_the_operator_driver(doc: GpuStackConfig) -> Iterator[Problem]:
    if doc.operator.driver.enabled:
        return
    for index, pool in enumerate(doc.pools):
        if pool.driver is not None:
            yield Problem(f"pools[{index}].driver", "operator.driver.enabled is false, so no driver is deployed: "
                                                    "remove driver, or enable operator.driver")
    if doc.drivers:
        yield Problem("drivers", "operator.driver.enabled is false, so no driver is deployed: remove drivers, or "
                                 "enable operator.driver")


def _pool_names_a_known_driver(doc: GpuStackConfig) -> Iterator[Problem]:
    for index, pool in enumerate(doc.pools):
        path = f"pools[{index}].driver"
        if isinstance(pool.driver, str) and pool.driver not in doc.drivers:
            hint = did_you_mean(pool.driver, list(doc.drivers))
            known = ", ".join(doc.drivers) or "none"
            yield Problem(path, f"{pool.driver!r} is not a drivers entry (drivers: {known})"
                                + (f"; {hint}" if hint else ": add it under drivers, or give the spec here"))
        elif isinstance(pool.driver, NvidiaDriverSpec) and pool.name in doc.drivers:
            yield Problem(path, f"a pool's own driver is named after the pool, and drivers.{pool.name} exists "
                                f"already: write driver: {pool.name} to use that one, or rename the drivers entry")
        if pool.driver is not None and pool.gpu_driver != "operator":
            yield Problem(path, "the pool runs the AKS-managed driver (gpuDriver: aks): remove driver, or set "
                                "gpuDriver: operator")
        elif pool.driver is not None and pool.workload != "container":
            yield Problem(path, f"a {pool.workload} pool passes its GPUs to VMs and runs no container driver (NVIDIA "
                                "labels it for the sandbox operands): remove driver; the vGPU manager is "
                                "operator.vgpuManager")


def _names_fit(doc: GpuStackConfig) -> Iterator[Problem]:
    for group in _written_groups(doc):
        if group.path.startswith("drivers.") and (len(group.name) > _MAX_NAME or not is_dns_label(group.name)):
            yield Problem(group.path, f"{group.name!r} cannot name a driver: it becomes the node label value "
                                      f"nvidia.com/gpu-operator.driver.owner and part of object names, so use at most "
                                      f"{_MAX_NAME} lower-case letters, digits and '-', starting and ending with a "
                                      "letter or digit")


def _defaults(doc: GpuStackConfig) -> Iterator[Problem]:
    defaults = [name for name, spec in doc.drivers.items() if spec.default]
    if defaults and not doc.operator.driver.use_nvidia_driver_crd:
        yield Problem(f"drivers.{defaults[0]}.default", "the driver of the nodes no other driver selects is the "
                                                        "cluster's (operator.driver); a default NVIDIADriver exists "
                                                        "only with operator.driver.useNvidiaDriverCRD: true")
    for name in defaults[1:]:
        yield Problem(f"drivers.{name}.default", f"multiple default NVIDIADrivers found ({', '.join(defaults)}), "
                                                 "which NVIDIA's operator refuses: keep default on one")
    if doc.operator.driver.use_nvidia_driver_crd and not defaults and DEFAULT_DRIVER_NAME in doc.drivers:
        yield Problem(f"drivers.{DEFAULT_DRIVER_NAME}", f"{DEFAULT_DRIVER_NAME!r} is the default NVIDIADriver's "
                                                        "name with useNvidiaDriverCRD: mark it default: true, or "
                                                        "rename it")


def _group_selects_nodes(doc: GpuStackConfig) -> Iterator[Problem]:
    for group in _written_groups(doc):
        if group.path.startswith("drivers.") and not (group.pools or group.node_selector or group.default):
            yield Problem(group.path, "selects no node: name it in pools[].driver, or give it a nodeSelector for "
                                      "nodes outside the pools")


def _selectors_do_not_overlap(doc: GpuStackConfig) -> Iterator[Problem]:
    selecting = [group for group in _written_groups(doc) if group.node_selector]
    for later, group in enumerate(selecting):
        for earlier in selecting[:later]:
            if selectors_may_overlap(earlier.node_selector, group.node_selector):
                yield Problem(f"{group.path}.nodeSelector", (
                    f"a node labelled {_text(earlier.node_selector | group.node_selector)} would be selected by "
                    f"{earlier.path} too, and NVIDIA's operator refuses a node two NVIDIADrivers select: make the two "
                    "selectors exclusive (one key with different values in each)"))


def _pools_match_their_driver_only(doc: GpuStackConfig) -> Iterator[Problem]:
    groups = {group.name: group for group in _written_groups(doc)}
    for index, pool in enumerate(doc.pools):
        if pool.gpu_driver != "operator" or pool.workload != "container":
            continue
        labels = pool_known_labels(doc, pool)
        own = pool_driver_name(doc, pool)
        for group in groups.values():
            selector = group.node_selector
            if not selector or group.name == own:
                continue
            if _matches(selector, labels):
                yield Problem(f"pools[{index}].driver" if pool.driver is not None else f"pools[{index}]", (
                    f"the pool's nodes carry {_text(selector)}, which {group.path}.nodeSelector selects, so NVIDIA's "
                    f"operator would give them that driver: set pools[{index}].driver: {group.name}, or narrow the "
                    "selector"))
        target = groups.get(own) if own is not None else None
        if target is not None and target.node_selector and not _matches(target.node_selector, labels):
            missing = {k: v for k, v in target.node_selector.items() if labels.get(k) != v}
            yield Problem(f"pools[{index}].driver", (
                f"{target.path}.nodeSelector asks for {_text(missing)}, which the pool's nodes do not carry, and the "
                f"driver's DaemonSets select by it: add the label{'s' if len(missing) > 1 else ''} to pools[{index}]"
                ".labels, or remove the nodeSelector"))


def _text(selector: dict[str, str]) -> str:
    return ", ".join(f"{key}={value}" for key, value in sorted(selector.items()))


def _renderable(doc: GpuStackConfig) -> Iterator[Problem]:
    """What this package renders per driver, and a merged spec that holds together."""
    driver = doc.operator.driver
    for group in _written_groups(doc):
        try:
            spec = group_spec(doc, group)
        except ValueError as error:
            message = str(error).split("\n", 2)[-1].strip()
            yield Problem(group.path, f"merged with the cluster driver (operator.driver), the spec does not hold "
                                      f"together: {message}")
            continue
        parts = {key: value for key, value in (("repository", spec.repository), ("image", spec.image),
                                               ("version", spec.version)) if value}
        if set(parts) not in ({"repository", "image", "version"}, {"image"}):
            written = [key for key in ("repository", "image", "version") if key in group.written_keys]
            yield Problem(f"{group.path}.{written[0]}" if written else group.path, (
                f"with the cluster driver's image fields the image reference is incomplete ({', '.join(parts) or 'none'}"
                " set): give repository, image and version together, or only image as a full reference"))
        if spec.driver_type == "vgpu-host-manager":
            yield Problem(f"{group.path}.driverType", (
                "the vGPU host manager runs on pools with workload: vm-vgpu as operator.vgpuManager (with "
                "sandboxWorkloads); it is not rendered as a driver of its own here: use driverType gpu or vgpu"))
        for key, own, cluster, files in (
            ("repoConfig.name", spec.repo_config.name, driver.repo_config.config_map_name, "driverRepoConfig"),
            ("certConfig.name", spec.cert_config.name, driver.cert_config.name, "driverCertConfig"),
        ):
            if own and own != cluster:
                yield Problem(f"{group.path}.{key}", (
                    f"the driver mounts each key of ConfigMap {own!r} as a file, and configs.{files} gives the files "
                    f"of the cluster driver's ConfigMap ({cluster or 'none'}) only: name that one, or leave it out"))


#: What NVIDIA's operator refuses among NVIDIADrivers alone (the importer applies these to the manifests).
DRIVER_CONFLICT_CHECKS: tuple[Check, ...] = (_defaults, _selectors_do_not_overlap)

DRIVER_GROUP_CHECKS: tuple[Check, ...] = (
    _driver_needs_the_operator_driver,
    _pool_names_a_known_driver,
    _names_fit,
    _defaults,
    _group_selects_nodes,
    _selectors_do_not_overlap,
    _pools_match_their_driver_only,
    _renderable,
)
