"""Importers: turn someone else's GPU Operator configuration into our config document.

* :func:`import_helm_values` — a GPU Operator Helm `values.yaml`, read as the v26.7.0 chart reads it;
* :func:`import_clusterpolicy` — an NVIDIA `ClusterPolicy` manifest (its `spec` becomes our `operator` section);
* :func:`load_import` — a YAML file holding either, told apart by the manifest's `apiVersion`/`kind`;
* :func:`import_network_manifests`, :func:`import_network_values` — NicClusterPolicy manifests (with an
  IPoIBNetwork) and network-operator chart values, as the `network` section;
* :func:`ignored_helm_values`, :func:`ignored_clusterpolicy_values`, :func:`ignored_network_values` — what was
  accepted and has no effect (or is not imported), with why.

Each returns a camelCase document that :func:`gpu_operator.config.parse_config` accepts, or raises ConfigError
listing every problem under the key the user wrote.
"""

from gpu_operator.config.importers.clusterpolicy_manifest import import_clusterpolicy
from gpu_operator.config.importers.clusterpolicy_notes import ignored_clusterpolicy_values
from gpu_operator.config.importers.helm_values import ignored_helm_values, import_helm_values
from gpu_operator.config.importers.loader import load_import
from gpu_operator.config.importers.network import (
    ignored_network_values,
    import_network_manifests,
    import_network_values,
)

__all__ = [
    "import_helm_values", "import_clusterpolicy", "load_import", "ignored_helm_values", "ignored_clusterpolicy_values",
    "import_network_manifests", "import_network_values", "ignored_network_values",
]
