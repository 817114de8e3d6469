"""The bucket tables: NVIDIA's recommended action for each bucket as NVSentinel maps it, and only known classes.

NVSentinel health-monitors/syslog-health-monitor/pkg/common/common.go `MapActionStringToProto`: RESTART_APP and
IGNORE -> NONE; WORKFLOW_XID_48, RESET_GPU -> COMPONENT_RESET; RecommendedAction names map to themselves; the
rest -> CONTACT_SUPPORT, which its xid_catalog_consistency_test.go `manualTriageBuckets` confirms for CHECK_UVM,
UPDATE_SWFW and CHECK_MECHANICALS.
"""

from __future__ import annotations

from gpu_operator.faults import FAULT_CLASSES, RECOMMENDED_ACTIONS
from gpu_operator.faults.buckets import (
    BUCKETS,
    DECODE_BUCKETS,
    RECOMMENDED_ACTION_CLASSES,
    UNBUCKETED_XIDS,
    XID_CLASS_OVERRIDES,
)

NVSENTINEL = {
    "RESTART_APP": "NONE", "IGNORE": "NONE", "WORKFLOW_XID_48": "COMPONENT_RESET", "RESET_GPU": "COMPONENT_RESET",
    "RESTART_VM": "RESTART_VM", "RESTART_BM": "RESTART_BM", "CONTACT_SUPPORT": "CONTACT_SUPPORT",
    "CHECK_UVM": "CONTACT_SUPPORT", "UPDATE_SWFW": "CONTACT_SUPPORT", "CHECK_MECHANICALS": "CONTACT_SUPPORT",
}


def test_the_actions_are_nvsentinels_where_it_maps_the_bucket() -> None:
    assert {bucket: BUCKETS[bucket][0] for bucket in NVSENTINEL} == NVSENTINEL


def test_every_verdict_names_a_known_action_and_class() -> None:
    verdicts = [*BUCKETS.values(), *DECODE_BUCKETS.values(), *UNBUCKETED_XIDS.values()]
    assert {action for action, _ in verdicts} <= set(RECOMMENDED_ACTIONS)
    assert {name for _, name in verdicts} | set(XID_CLASS_OVERRIDES.values()) <= set(FAULT_CLASSES)
    assert set(RECOMMENDED_ACTION_CLASSES) == set(RECOMMENDED_ACTIONS)


def test_a_decoded_nvlink_fault_is_of_the_nvlink_class() -> None:
    """The design's `nvlink` class holds XIDs 144-150 whose decode asks for a reset."""
    assert DECODE_BUCKETS["RESET_GPU"] == ("COMPONENT_RESET", "nvlink")
    assert {name for _, name in DECODE_BUCKETS.values()} - {"nvlink"} == {"informational", "application"}
