"""The RDMA device plugins' configs, generated as JSON from the typed `network` section.

The NicClusterPolicy carries each plugin's config as a JSON string (`rdmaSharedDevicePlugin.config`,
`sriovDevicePlugin.config`); the operator writes it into the plugin's ConfigMap and its admission webhook checks
it against the plugin's schema. Generating the JSON from the models keeps those strings well-formed and within
the keys the schemas accept:

* k8s-rdma-shared-dev-plugin: `configList[]` of `{resourcePrefix, resourceName, rdmaHcaMax, selectors}`; every
  pod requesting the resource sees all matched HCAs, and `rdmaHcaMax` pods per node may share them;
* sriov-network-device-plugin: `resourceList[]` of `{resourcePrefix, resourceName, selectors[]}`, one unit per
  InfiniBand virtual function, with `isRdma` so the VF's RDMA character devices are mounted into the pod. The
  plugin's own default prefix is `intel.com`, so the prefix is always written.
"""

from __future__ import annotations

import json
from typing import Any

from gpu_operator.config.network import RdmaSharedPluginSpec, SriovPluginSpec

__all__ = ["rdma_shared_config", "sriov_config", "to_json"]


def rdma_shared_config(spec: RdmaSharedPluginSpec) -> dict[str, Any]:
    """The shared plugin's config: one resource over the selected HCAs."""
    selectors = spec.selectors.model_dump(by_alias=True, exclude_defaults=False)
    return {
        "configList": [{
            "resourcePrefix": spec.resource_prefix,
            "resourceName": spec.resource_name,
            "rdmaHcaMax": spec.rdma_hca_max,
            "selectors": {key: list(values) for key, values in selectors.items() if values},
        }]
    }


def sriov_config(spec: SriovPluginSpec) -> dict[str, Any]:
    """The SR-IOV plugin's config: one resource of InfiniBand VFs with their RDMA devices."""
    selector: dict[str, Any] = {}
    if spec.vendors:
        selector["vendors"] = list(spec.vendors)
    if spec.link_types:
        selector["linkTypes"] = list(spec.link_types)
    selector["isRdma"] = True
    return {
        "resourceList": [{
            "resourcePrefix": spec.resource_prefix,
            "resourceName": spec.resource_name,
            "selectors": [selector],
        }]
    }


def to_json(config: dict[str, Any]) -> str:
    """The config as the NicClusterPolicy carries it."""
    return json.dumps(config, indent=2) + "\n"
