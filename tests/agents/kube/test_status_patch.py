"""Patching a `status` subresource, and the strategic merge of Node conditions by `type`.

The API server merges `status.conditions` of a strategic merge patch item by item on `type` (the field's
`patchMergeKey` in k8s.io/api core/v1 NodeStatus), which is how Kubernetes' node problem detector writes its own
conditions without touching the kubelet's; the fake API server does the same, and a merge patch still replaces
the list.
"""

from __future__ import annotations

from gpu_operator.agents.kube import NODES, PatchType
from tests.agents.kube.fake_apiserver import FakeApiServer


def test_a_status_patch_goes_to_the_subresource_and_merges_conditions_by_type() -> None:
    with FakeApiServer() as server:
        server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"a": "b"}},
                    "status": {"conditions": [{"type": "Ready", "status": "True"},
                                              {"type": "GPUThermal", "status": "False"}]}})
        client = server.client()
        patched = client.patch(NODES, "n1", {"metadata": {"labels": {"x": "y"}},
                                             "status": {"conditions": [{"type": "GPUThermal", "status": "True"},
                                                                       {"type": "GPUDriverFailure",
                                                                        "status": "False"}]}},
                               patch_type=PatchType.STRATEGIC, status=True)
        assert [r.path for r in server.requests if r.method == "PATCH"] == ["/api/v1/nodes/n1/status"]
        assert patched["metadata"]["labels"] == {"a": "b"}  # the status subresource changes status only
        assert patched["status"]["conditions"] == [{"type": "Ready", "status": "True"},
                                                   {"type": "GPUThermal", "status": "True"},
                                                   {"type": "GPUDriverFailure", "status": "False"}]
        replaced = client.patch(NODES, "n1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
                                status=True)
        assert replaced["status"]["conditions"] == [{"type": "Ready", "status": "False"}]
