"""Every simulated node's scrape, parsed back: names, HELP, TYPE and labels exactly as dcgm-exporter's list says.

For each profile, every default field the profile's GPUs can provide (see `support.NOT_SUPPORTED`) is exposed
with dcgm-exporter's HELP text and type, one series per entity (GPU, or GPU instance under MIG), and every
series carries exactly the label set dcgm-exporter 4.8 gives it.
"""

from __future__ import annotations

import pytest

from gpu_operator.agents.metrics_exporter.counters import Counter, parse_counters
from gpu_operator.agents.nvml.simulated import load_profile, profile_names
from tests.agents.metrics_exporter.support import (
    HOST,
    NOT_SUPPORTED,
    UTILISATION,
    families_of,
    make_collector,
)
from tests.support.reference import reference_file

IDENTITY = {"gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname", "DCGM_FI_DRIVER_VERSION"}
MIG = {"GPU_I_PROFILE", "GPU_I_ID"}
XID = {"err_code", "err_msg"}


@pytest.fixture(scope="module")
def upstream() -> tuple[Counter, ...]:
    return parse_counters(reference_file("dcgm-exporter/default-counters.csv").read_text())


def test_every_profile_is_covered() -> None:
    assert set(NOT_SUPPORTED) == set(profile_names())


@pytest.mark.parametrize("profile", sorted(NOT_SUPPORTED))
def test_families_match_dcgm_exporters_list(profile: str, upstream: tuple[Counter, ...]) -> None:
    collector = make_collector(profile, counters=upstream)
    families = families_of(collector)
    expected = {c.name: c for c in upstream if not c.is_label and c.name not in NOT_SUPPORTED[profile]}
    assert set(families) == set(expected)
    for name, family in families.items():
        assert (family.documentation, family.type) == (expected[name].help, expected[name].type), name
        # utilisation has no value on GPU instances (NVML refuses it in MIG mode): one series per other entity
        instances_lack_it = name in UTILISATION
        entities = [e for e in collector.entities if not (instances_lack_it and e.gpu_instance_id is not None)]
        assert len(family.samples) == len(entities), name


@pytest.mark.parametrize("profile", sorted(NOT_SUPPORTED))
def test_every_series_has_dcgm_exporters_labels(profile: str) -> None:
    node = load_profile(profile)
    collector = make_collector(profile)
    uuid_by_index = {str(i): gpu.uuid for i, gpu in enumerate(node.gpus)}
    model_by_index = {str(i): node.model_of(i).name for i in range(len(node.gpus))}
    for name, family in families_of(collector).items():
        for sample in family.samples:
            labels = sample.labels
            instance = labels.get("GPU_I_ID") is not None
            expected = IDENTITY | (MIG if instance else set()) | (XID if name == "DCGM_FI_DEV_XID_ERRORS" else set())
            assert set(labels) == expected, (name, labels)
            gpu = labels["gpu"]
            assert labels["UUID"] == uuid_by_index[gpu]
            assert labels["device"] == f"nvidia{gpu}"
            assert labels["modelName"] == model_by_index[gpu]
            assert labels["pci_bus_id"] == node.gpus[int(gpu)].bus_id
            assert labels["hostname"] == HOST
            assert labels["DCGM_FI_DRIVER_VERSION"] == node.driver.version


def test_series_per_gpu_instance_under_mig() -> None:
    collector = make_collector("a100-4x-mixed-mig")
    temperature = families_of(collector)["DCGM_FI_DEV_GPU_TEMP"]
    instances = sorted(
        (s.labels["gpu"], s.labels.get("GPU_I_PROFILE"), s.labels.get("GPU_I_ID")) for s in temperature.samples
    )
    assert instances == sorted(
        [("0", "1g.10gb", str(gi)) for gi in range(7, 14)]
        + [("1", "3g.40gb", "2"), ("1", "2g.20gb", "3"), ("1", "1g.10gb", "9"), ("1", "1g.10gb", "10")]
        + [("2", None, None), ("3", None, None)]
    )
    by_instance = {(s.labels["gpu"], s.labels.get("GPU_I_ID")): s.value for s in temperature.samples}
    assert by_instance[("0", "7")] == by_instance[("0", "13")]  # a device-wide reading on every instance


def test_frame_buffer_of_a_gpu_instance_is_its_own() -> None:
    families = families_of(make_collector("a100-4x-mixed-mig"))
    totals = {}
    for sample in families["DCGM_FI_DEV_FB_FREE"].samples:
        key = (sample.labels["gpu"], sample.labels.get("GPU_I_ID"))
        totals[key] = sample.value
    for sample in families["DCGM_FI_DEV_FB_USED"].samples:
        totals[(sample.labels["gpu"], sample.labels.get("GPU_I_ID"))] += sample.value
    assert totals[("1", "2")] == 40192  # 3g.40gb: free + used = its memory (no reserved share)
    assert totals[("1", "3")] == 19968  # 2g.20gb
    assert totals[("2", None)] == 81920 - 480  # a whole GPU: total less reserved


def test_label_order_and_value_formats() -> None:
    body = make_collector("h100-8x").collect().body.decode()
    line = next(ln for ln in body.splitlines() if ln.startswith('DCGM_FI_DEV_POWER_USAGE{gpu="0"'))
    labels, value = line.split("} ")
    assert labels == (
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-879bf707-73f0-4d71-a7ec-cf5c106427d9",'
        'pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",'
        'hostname="gpu-node-1",DCGM_FI_DRIVER_VERSION="570.124.06"'
    )
    assert 68.0 <= float(value) <= 125.0 and len(value.split(".")[-1]) <= 3
    xid = next(ln for ln in body.splitlines() if ln.startswith("DCGM_FI_DEV_XID_ERRORS{gpu=\"0\""))
    assert xid.endswith(',DCGM_FI_DRIVER_VERSION="570.124.06",err_code="0",err_msg="No Error"} 0')


def test_samples_follow_dcgm_exporters_signature_order() -> None:
    temperature = families_of(make_collector("h100-8x"), cycles=1)["DCGM_FI_DEV_GPU_TEMP"]
    uuids = [s.labels["UUID"] for s in temperature.samples]
    assert uuids == sorted(uuids)  # UUID is the first label, in name order, that differs between GPUs


def test_profiling_ratios_and_rates_on_hopper() -> None:
    families = families_of(make_collector("h200-8x"))
    for name in ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"):
        assert all(0.0 <= s.value <= 1.0 for s in families[name].samples), name
    tx = families["DCGM_FI_PROF_PCIE_TX_BYTES"].samples
    assert all(s.value == int(s.value) and s.value % (1 << 20) == 0 for s in tx)


def test_profiling_needs_a_baseline_sample() -> None:
    assert "DCGM_FI_PROF_GR_ENGINE_ACTIVE" not in families_of(make_collector("h100-8x"), cycles=1)


def test_vgpu_license_status_is_zero_on_bare_metal() -> None:
    samples = families_of(make_collector("h100-8x"))["DCGM_FI_DEV_VGPU_LICENSE_STATUS"].samples
    assert [s.value for s in samples] == [0.0] * 8


def test_nvlink_bandwidth_is_a_rate_starting_at_zero() -> None:
    collector = make_collector("h100-8x")
    first = families_of(collector, cycles=1)["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"]
    assert {s.value for s in first.samples} == {0.0}
