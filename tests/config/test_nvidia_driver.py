"""A driver spec (`drivers.<name>`, `pools[].driver`) is NVIDIA's NVIDIADriver spec, and says what it writes.

The fields are those of `api/nvidia/v1alpha1/nvidiadriver_types.go` (gpu-operator v26.7.0), whose CRD is
`../shared/reference/data/crds/nvidia.com_nvidiadrivers.yaml`: every spec we accept, merged over the cluster
driver, is a valid NVIDIADriver spec there (strict: unknown fields fail), and our one field of our own, `uid`, is
the NVIDIADriver's `metadata.uid`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpu_operator.config import load_config, parse_config
from gpu_operator.config.driver_groups import driver_groups
from gpu_operator.config.importers.clusterpolicy_manifest import without_nulls
from gpu_operator.config.nvidia_driver import NvidiaDriverSpec, full_document
from tests.support.schemas import REFERENCE_DATA, crd_errors

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "configs" / "per-pool-drivers.yaml"
AKS = {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34"}


def _as_nvidia_driver(name: str, spec: NvidiaDriverSpec) -> dict[str, Any]:
    document = without_nulls(full_document(spec))
    document.pop("uid", None)  # metadata.uid
    return {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": name},
            "spec": document}


def test_the_spec_has_the_crds_fields_and_the_uid_only_besides() -> None:
    [crd] = [d for d in yaml.safe_load_all((REFERENCE_DATA / "crds/nvidia.com_nvidiadrivers.yaml").read_text()) if d]
    [version] = crd["spec"]["versions"]
    fields = set(version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"])
    ours = {field.alias or name for name, field in NvidiaDriverSpec.model_fields.items()}
    assert ours - fields == {"uid"}
    assert fields - ours == set()


def test_every_merged_driver_of_the_example_is_a_valid_nvidiadriver() -> None:
    groups = driver_groups(load_config(EXAMPLE))
    assert [group.name for group, _ in groups] == ["training", "t4"]
    for group, spec in groups:
        assert crd_errors(_as_nvidia_driver(group.name, spec)) == [], group.name


def test_a_written_spec_reads_back_as_written() -> None:
    # a dumped default would read back as an override of the cluster driver's value
    document = {"aks": AKS, "operator": {"driver": {"kernelModuleType": "open", "upgradePolicy": {
                    "maxParallelUpgrades": 3}}},
                "pools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "driver": {
                    "version": "580.105.08", "kernelModuleType": "auto", "upgradePolicy": {"maxUnavailable": 2}}}]}
    config = parse_config(document)
    written = document["pools"][0]["driver"]
    assert config.pools[0].driver.model_dump(mode="json", by_alias=True) == written
    for dumped in (config.to_document(), config.to_document(exclude_defaults=True)):
        assert dumped["pools"][0]["driver"] == written
        assert parse_config(dumped) == config
    [(_, spec)] = driver_groups(config)
    # kernelModuleType written at its default still overrides the cluster's; upgradePolicy merges key by key
    assert spec.kernel_module_type == "auto"
    assert (spec.upgrade_policy.max_parallel_upgrades, spec.upgrade_policy.max_unavailable) == (3, 2)
    assert (full_document(spec)["repository"], full_document(spec)["image"]) == ("nvcr.io/nvidia", "driver")
