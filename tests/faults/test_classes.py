"""The fault classes: the names, Node condition types and default ladders other parts build on (the remediation
design of issue 26), and the rules every ladder keeps."""

from __future__ import annotations

import pytest

from gpu_operator.faults import ACTIONS, FAULT_CLASSES, QUARANTINE_ACTIONS, fault_class

#: The contract: class -> (Node condition type, default ladder, quarantines by default).
CONTRACT = {
    "application": (None, ("observe",), False),
    "informational": (None, ("observe",), False),
    "reset-required": ("GPUResetRequired", ("cordon", "drain", "reset-gpu", "reboot", "needs-human"), True),
    "fallen-off-bus": ("GPUFallenOffBus", ("cordon", "drain", "reboot", "reimage", "needs-human"), True),
    "reboot-required": ("GPURebootRequired", ("cordon", "drain", "reboot", "needs-human"), True),
    "nvlink": ("GPUNVLinkError", ("cordon", "drain", "reset-gpu", "reboot", "needs-human"), True),
    "hardware-failure": ("GPUHardwareFailure", ("cordon", "drain", "needs-human"), True),
    "thermal": ("GPUThermal", ("observe",), False),
    "driver-failure": ("GPUDriverFailure", ("observe",), False),
}


def test_the_classes_are_the_contract() -> None:
    assert {name: (c.condition, c.ladder, c.quarantine) for name, c in FAULT_CLASSES.items()} == CONTRACT
    assert all(c.name == name and c.description for name, c in FAULT_CLASSES.items())


@pytest.mark.parametrize("name", list(FAULT_CLASSES))
def test_each_ladder_is_well_formed(name: str) -> None:
    """Steps come from the remediation's vocabulary, each once; a class quarantines exactly when its ladder cordons
    or taints, quarantines first, and then ends with a person; a class that does not quarantine only observes."""
    cls = FAULT_CLASSES[name]
    assert set(cls.ladder) <= set(ACTIONS) and len(set(cls.ladder)) == len(cls.ladder)
    assert cls.quarantine == bool(QUARANTINE_ACTIONS & set(cls.ladder))
    if cls.quarantine:
        assert cls.ladder[0] in QUARANTINE_ACTIONS and cls.ladder[-1] == "needs-human"
        assert cls.condition is not None and cls.condition.startswith("GPU")
    else:
        assert cls.ladder == ("observe",)


def test_condition_types_are_distinct() -> None:
    conditions = [c.condition for c in FAULT_CLASSES.values() if c.condition is not None]
    assert len(conditions) == len(set(conditions))


def test_an_unknown_class_names_the_known_ones() -> None:
    assert fault_class("nvlink") is FAULT_CLASSES["nvlink"]
    with pytest.raises(KeyError, match="unknown fault class 'reset'.*reset-required"):
        fault_class("reset")
