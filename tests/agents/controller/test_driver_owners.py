"""The driver owner label, as NVIDIA's operator assigns it (gpu-operator v26.7.0
`internal/nvidiadriver/nvidiadriver.go`: `AssignOwners`, `desiredOwnerForNode`, `ownerLabelNeedsUpdate`), with the
pools of the stack first."""

from __future__ import annotations

import pytest

from gpu_operator.agents.controller.cluster_state import ClusterState, NodeFacts
from gpu_operator.agents.controller.driver_owners import OWNER_LABEL, POOL_LABEL, DriverOwner, DriverOwners, owner_change
from gpu_operator.agents.controller.reconcile import reconcile
from gpu_operator.agents.controller.settings import ControllerSettings
from gpu_operator.labels import LabellingPolicy
from gpu_operator.upgrade import UpgradePolicy

GPU = {"nvidia.com/gpu.present": "true"}
OWNERS = DriverOwners((DriverOwner("training", pools=("h100",)),
                       DriverOwner("inference", node_selector={"team": "inference"}),
                       DriverOwner("batch", node_selector={"tier": "batch"}),
                       DriverOwner("default", default=True)), cluster_pools=("a100",))


@pytest.mark.parametrize(("labels", "change"), [
    ({"team": "inference"}, {OWNER_LABEL: "inference"}),  # the one non-default driver whose selector matches
    ({"team": "research"}, {OWNER_LABEL: "default"}),  # none matches: the default
    ({"team": "inference", OWNER_LABEL: "inference"}, {}),  # already so: no write
    ({"team": "inference", OWNER_LABEL: "default"}, {OWNER_LABEL: "inference"}),  # moved
    ({"team": "inference", "tier": "batch", OWNER_LABEL: "default"}, {}),  # two match: left as it is
    ({POOL_LABEL: "h100", "team": "inference"}, {OWNER_LABEL: "training"}),  # the stack's pool names its driver
    ({POOL_LABEL: "a100", OWNER_LABEL: "default"}, {OWNER_LABEL: None}),  # a pool on the cluster's driver
    ({POOL_LABEL: "other", "tier": "batch"}, {OWNER_LABEL: "batch"}),  # a pool the stack does not know
])
def test_the_owner_of_a_gpu_node(labels: dict[str, str], change: dict[str, str | None]) -> None:
    assert owner_change({**GPU, **labels}, OWNERS) == change


def test_without_a_default_an_unmatched_node_has_no_owner() -> None:
    owners = DriverOwners((DriverOwner("inference", node_selector={"team": "inference"}),))
    assert owner_change({**GPU, OWNER_LABEL: "gone"}, owners) == {OWNER_LABEL: None}
    assert owner_change({**GPU}, owners) == {}


def test_only_gpu_nodes_and_only_with_drivers_of_their_own() -> None:
    assert owner_change({"team": "inference"}, OWNERS) == {}  # AssignOwners lists nvidia.com/gpu.present=true only
    assert owner_change({**GPU, OWNER_LABEL: "x"}, DriverOwners()) == {}  # ClusterPolicy mode writes no owner


def test_the_controller_writes_the_owner_in_the_nodes_patch() -> None:
    settings = ControllerSettings("gpu-operator", LabellingPolicy(), UpgradePolicy(), driver_owners=OWNERS)
    node = NodeFacts("gpu-0", {**GPU, "team": "inference"})
    [patch] = [p for p in reconcile(ClusterState({"gpu-0": node}), settings, 0.0).patches if p.node == "gpu-0"]
    assert patch.labels[OWNER_LABEL] == "inference"
