"""The fault catalog's generator: the committed package data is what it makes of NVIDIA's files, and a row it has
no decision for stops it by name rather than being classed by a default.

Inputs: reference data `nvsentinel/Xid-Catalog.xlsx` and `nvsentinel/dcgmerrorsmapping.csv` (NVIDIA/NVSentinel
health-monitors/syslog-health-monitor/pkg/common/ and distros/kubernetes/nvsentinel/charts/gpu-health-monitor/
files/, main at 0f60731).
"""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.reference import REPO_ROOT, reference_file

TOOL = REPO_ROOT / "tools" / "generate_fault_catalog.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_fault_catalog", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


GENERATOR = _tool()


def _inputs() -> tuple[Path, Path]:
    return reference_file("nvsentinel/Xid-Catalog.xlsx"), reference_file("nvsentinel/dcgmerrorsmapping.csv")


def test_the_committed_catalog_is_what_the_generator_makes() -> None:
    committed = GENERATOR.OUTPUT.read_text(encoding="utf-8")
    assert committed == GENERATOR.render(*_inputs()), "run tools/generate_fault_catalog.py and commit the result"


def test_check_mode_tells_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workbook, _ = _inputs()
    reference = workbook.parent.parent
    stale = tmp_path / "catalog.yaml"
    stale.write_text(GENERATOR.OUTPUT.read_text(encoding="utf-8").replace("class: fallen-off-bus", "class: x", 1))
    assert GENERATOR.main(["--reference", str(reference), "--output", str(stale), "--check"]) == 1
    assert "is not up to date: run tools/generate_fault_catalog.py" in capsys.readouterr().err
    assert GENERATOR.main(["--reference", str(reference), "--output", str(stale)]) == 0
    assert GENERATOR.main(["--reference", str(reference), "--output", str(stale), "--check"]) == 0


def test_the_workbook_is_read_by_sheet_and_header(tmp_path: Path) -> None:
    sheets = GENERATOR.read_workbook(_inputs()[0])
    assert list(sheets) == ["Xids", "Xid 144-150 Decode", "Resolution Buckets", "Customer User Guide"]
    xid_79 = next(row for row in sheets["Xids"] if row.get("B") == "79")
    assert (xid_79["C"], xid_79["I"]) == ("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "RESTART_BM")


def test_a_bucket_without_a_decision_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    buckets = dict(GENERATOR.BUCKETS)
    del buckets["RESTART_BM"]
    monkeypatch.setattr(GENERATOR, "BUCKETS", buckets)
    with pytest.raises(GENERATOR.CatalogError, match="XID 79: resolution bucket 'RESTART_BM' has no decision"):
        GENERATOR.build(*_inputs())


def test_an_xid_without_a_bucket_or_a_decision_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GENERATOR, "UNBUCKETED_XIDS", {k: v for k, v in GENERATOR.UNBUCKETED_XIDS.items() if k != 169})
    with pytest.raises(GENERATOR.CatalogError, match="XID 169 has no immediate bucket and no decision"):
        GENERATOR.build(*_inputs())


def test_a_dcgm_action_nvidia_does_not_use_stops_the_generator(tmp_path: Path) -> None:
    workbook, mapping = _inputs()
    changed = tmp_path / "dcgmerrorsmapping.csv"
    changed.write_text(mapping.read_text(encoding="utf-8") + "DCGM_FR_NEW,REPLACE_GPU\n", encoding="utf-8")
    with pytest.raises(GENERATOR.CatalogError, match="DCGM_FR_NEW has unknown action 'REPLACE_GPU'"):
        GENERATOR.build(workbook, changed)


def test_a_missing_sheet_is_named(tmp_path: Path) -> None:
    """A workbook whose decode sheet was renamed (the generator reads sheets by name, as NVSentinel does)."""
    workbook, mapping = _inputs()
    renamed = tmp_path / "Xid-Catalog.xlsx"
    with zipfile.ZipFile(workbook) as source, zipfile.ZipFile(renamed, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "xl/workbook.xml":
                data = data.replace(b'name="Xid 144-150 Decode"', b'name="NVLink5"')
            target.writestr(item, data)
    with pytest.raises(GENERATOR.CatalogError, match="no sheet 'Xid 144-150 Decode'"):
        GENERATOR.build(renamed, mapping)


def test_missing_reference_data_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert GENERATOR.main(["--reference", str(tmp_path), "--output", str(tmp_path / "out.yaml")]) == 2
    assert "generate_fault_catalog:" in capsys.readouterr().err
    assert not (tmp_path / "out.yaml").exists()
