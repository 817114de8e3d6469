"""The AKS resources of a config as ARM documents by file name, and the pool summary rows."""

from __future__ import annotations

from gpu_operator.config import load_config, parse_config
from gpu_operator.render.aks.documents import azure_documents
from gpu_operator.render.aks.summary import POOL_HEADER, pool_summary_rows
from tests.render.aks.helpers import AKS, H100, T4, with_pools


def test_pools_only_for_an_existing_cluster() -> None:
    documents = azure_documents(with_pools(H100, T4))
    assert list(documents) == ["agentpool-h100.json", "agentpool-t4.json"]
    assert documents["agentpool-t4.json"]["name"] == "aks-gpu/t4"


def test_the_cluster_first_when_created() -> None:
    config = with_pools(T4, aks={**AKS, "create": True, "location": "westeurope"})
    documents = azure_documents(config)
    assert list(documents) == ["managedcluster-aks-gpu.json", "agentpool-t4.json"]
    assert documents["managedcluster-aks-gpu.json"]["type"] == "Microsoft.ContainerService/managedClusters"


def test_nothing_without_aks() -> None:
    assert azure_documents(parse_config({})) == {}
    assert azure_documents(load_config(None)) != {}


def test_summary_rows() -> None:
    config = with_pools({**H100, "count": 2, "migConfig": "all-1g.10gb"},
                        {**T4, "autoscale": {"minCount": 0, "maxCount": 3}, "taints": []},
                        {**H100, "name": "h100b"})
    assert len(POOL_HEADER) == 9
    assert pool_summary_rows(config) == [
        ("h100", "Standard_ND96isr_H100_v5", "2", "8x H100-SXM5-80GB 80GiB", "GPU operator", "device plugin",
         "8x 400 Gb/s", "all-1g.10gb", "sku=gpu:NoSchedule"),
        ("t4", "Standard_NC4as_T4_v3", "0..3 (starts at 0)", "1x Tesla T4 16GiB", "GPU operator", "device plugin",
         "-", "-", "-"),
        ("h100b", "Standard_ND96isr_H100_v5", "1", "8x H100-SXM5-80GB 80GiB", "GPU operator", "device plugin",
         "8x 400 Gb/s", "all-disabled", "sku=gpu:NoSchedule"),
    ]
