"""The catalog's package data: read into typed records, and a broken file named rather than half-read."""

from __future__ import annotations

from importlib import resources

import pytest

from gpu_operator.faults import catalog
from gpu_operator.faults.catalog import IntrInfoMask, load_catalog

_TEXT = resources.files("gpu_operator.faults").joinpath("catalog.yaml").read_text(encoding="utf-8")


def test_the_shipped_catalog_covers_the_three_sources() -> None:
    data = catalog()
    assert sorted(data.xids) == list(range(1, 173))
    assert sorted(data.nvlink5_decode) == list(range(144, 151))
    assert sum(len(rules) for rules in data.nvlink5_decode.values()) == 95  # the decode sheet's rows
    assert len(data.dcgm_health) == 134  # the mapping's rows
    assert data.xids[79].mnemonic == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    assert (data.xids[79].immediate, data.xids[79].investigatory) == ("RESTART_BM", "CONTACT_SUPPORT")


def test_an_interrupt_info_mask_reads_the_bits_it_fixes() -> None:
    """NVIDIA's masks are written most significant bit first; `-` is a bit the rule does not read."""
    mask = IntrInfoMask.parse("------100101----------0111000110")
    assert mask.matches(0x025525C6)  # NVSentinel's csv_test.go sample for XID 149 NETIR_LINK_EVT
    assert mask.matches(0xFE5FFDC6)  # every don't-care bit set
    assert not mask.matches(0x025525C7)
    assert not mask.matches(0x026525C6)
    with pytest.raises(ValueError, match="not 32 characters"):
        IntrInfoMask.parse("0101")
    with pytest.raises(ValueError, match="not 32 characters"):
        IntrInfoMask.parse("x" * 32)


def test_a_row_with_an_unknown_class_is_named() -> None:
    broken = _TEXT.replace("class: fallen-off-bus", "class: off-the-bus", 1)
    with pytest.raises(ValueError, match="XID 79: class 'off-the-bus' is not a fault class"):
        load_catalog(broken)


def test_a_file_without_a_section_says_to_regenerate() -> None:
    with pytest.raises(ValueError, match="lacks 'dcgm_health': regenerate it with tools/generate_fault_catalog.py"):
        load_catalog(_TEXT.split("dcgm_health:")[0])
