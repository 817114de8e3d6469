"""Read a file to import: a GPU Operator Helm values file or a ClusterPolicy manifest, told apart by content.

A Kubernetes manifest names its `apiVersion` and `kind`; a values file never has those keys. A multi-document
file (or a `kind: List`) is accepted when exactly one of its objects is a ClusterPolicy. NicClusterPolicy manifests
(merged in order, as kustomize overlays; with an IPoIBNetwork) and network-operator chart values become the
`network` section (:mod:`gpu_operator.config.importers.network`).

NVIDIADriver manifests, beside the ClusterPolicy in one file or in files named after the first (`import-values
values.yaml nvidiadrivers.yaml`), become the `drivers` section
(:mod:`gpu_operator.config.importers.nvidia_driver_manifest`); NVIDIADrivers alone are imported over the chart's
defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpu_operator.config.errors import ConfigError, Problem
from gpu_operator.config.file_kinds import import_source_problem
from gpu_operator.config.importers.clusterpolicy_manifest import KIND, import_clusterpolicy
from gpu_operator.config.importers.helm_values import import_helm_values
from gpu_operator.config.importers.nvidia_driver_manifest import (
    SOURCE as DRIVERS_SOURCE,
    import_nvidia_drivers,
    is_nvidia_driver,
)
from gpu_operator.config.importers.network import (
    IPOIB_NETWORK,
    POLICY,
    import_network_manifests,
    import_network_values,
    is_network_values,
)
from gpu_operator.config.yaml_reader import read_yaml_documents

__all__ = ["load_import", "is_manifest"]

NETWORK_KINDS = (POLICY, IPOIB_NETWORK)


def is_manifest(data: Any) -> bool:
    return isinstance(data, dict) and ("apiVersion" in data or "kind" in data)


def _documents(path: Path) -> list[Any]:
    documents = read_yaml_documents(path)
    listed = [item for d in documents if is_manifest(d) and d.get("kind") == "List" for item in d.get("items") or []]
    return [d for d in documents if not (is_manifest(d) and d.get("kind") == "List")] + listed


def _one(path: Path, documents: list[Any]) -> Any:
    if len(documents) == 1:
        return documents[0]
    policies = [d for d in documents if is_manifest(d) and d.get("kind") == KIND]
    if len(policies) == 1:
        return policies[0]
    found = f"{len(policies)} ClusterPolicy objects" if policies else f"{len(documents)} documents"
    raise ConfigError(
        [Problem("", f"expected one Helm values document or one ClusterPolicy manifest, found {found}")], str(path)
    )


def load_import(path: Path | str, namespace: str = "gpu-operator",
                drivers: Sequence[Path | str] = ()) -> dict[str, Any]:
    """Our config document for a Helm values file or a ClusterPolicy manifest, with the NVIDIADriver manifests of
    it and of `drivers` (files holding only NVIDIADrivers); ConfigError names the file."""
    path = Path(path)
    found = _documents(path)
    manifests = [d for d in found if is_nvidia_driver(d)]
    for extra in map(Path, drivers):
        more = _documents(extra)
        others = [d for d in more if not is_nvidia_driver(d)]
        if others:
            raise ConfigError([Problem("", f"holds {len(others)} document(s) that are no NVIDIADriver manifest: give the "
                                           "values or the ClusterPolicy first, and only NVIDIADrivers after it")],
                              str(extra))
        manifests += more
    documents = [d for d in found if not is_nvidia_driver(d)]
    document = _load(path, documents, namespace) if documents or not manifests else {"namespace": namespace}
    if not manifests:
        return document
    try:
        return import_nvidia_drivers(document, manifests)
    except ConfigError as error:
        raise ConfigError(error.problems, f"{DRIVERS_SOURCE} of {path}{''.join(f', {d}' for d in drivers)}") from None


def _load(path: Path, documents: list[Any], namespace: str) -> dict[str, Any]:
    kind = import_source_problem(documents[0], str(path)) if len(documents) == 1 else None
    if kind is not None:
        raise ConfigError([kind], str(path))
    try:
        if documents and all(is_manifest(d) and (d.get("apiVersion"), d.get("kind")) in NETWORK_KINDS
                             for d in documents):
            return {"network": import_network_manifests(documents)}
        if len(documents) == 1 and not is_manifest(documents[0]) and is_network_values(documents[0]):
            return {"network": import_network_values(documents[0])}
    except ConfigError as error:
        raise ConfigError(error.problems, f"{error.source} {path}") from None
    data = _one(path, documents) if documents else {}
    importer = import_clusterpolicy if is_manifest(data) else import_helm_values
    try:
        return importer(data, namespace=namespace)
    except ConfigError as error:
        raise ConfigError(error.problems, f"{error.source} {path}") from None
