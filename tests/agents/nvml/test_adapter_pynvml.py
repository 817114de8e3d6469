"""The adapter over pynvml itself, with pynvml's functions patched (no driver needed).

A two-GPU H100 node is faked at the level of pynvml calls, returning pynvml's own ctypes structures, so the
adapter's decoding, error mapping, per-field degradation and per-GPU loss handling run as on a real node.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pynvml
import pytest

from gpu_operator.agents.nvml import (
    ComputeCapability,
    EventKind,
    MemoryInfo,
    MigMode,
    NvmlDriverNotLoaded,
    NvmlLibraryNotFound,
    PciInfo,
    open_nvml,
)
from gpu_operator.agents.nvml.empty import EmptyNvml

MIB = 1 << 20
HANDLES = ("handle-0", "handle-1")
UUIDS = {"handle-0": "GPU-11111111-2222-3333-4444-555555555555", "handle-1": "GPU-66666666-7777-8888-9999-000000000000"}
BUS_IDS = {"handle-0": b"00000000:18:00.0", "handle-1": b"00000000:2A:00.0"}
FIELD_VALUES = {
    pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION: 123_456_789,
    pynvml.NVML_FI_DEV_PCIE_REPLAY_COUNTER: 3,
    pynvml.NVML_FI_DEV_ECC_SBE_VOL_TOTAL: 0,
    pynvml.NVML_FI_DEV_ECC_DBE_VOL_TOTAL: 0,
    pynvml.NVML_FI_DEV_ECC_SBE_AGG_TOTAL: 5,
    pynvml.NVML_FI_DEV_ECC_DBE_AGG_TOTAL: 1,
    pynvml.NVML_FI_DEV_REMAPPED_COR: 2,
    pynvml.NVML_FI_DEV_REMAPPED_UNC: 0,
    pynvml.NVML_FI_DEV_REMAPPED_PENDING: 0,
    pynvml.NVML_FI_DEV_REMAPPED_FAILURE: 0,
    pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: 4_096,
    pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: 8_192,
}


def _nvml_error(code: int) -> Any:
    def raise_(*args: Any, **kwargs: Any) -> Any:
        raise pynvml.NVMLError(code)

    return raise_


def _memory(handle: str, version: int | None = None) -> Any:
    total, reserved, used = 81559 * MIB, 512 * MIB, 1024 * MIB
    if version is None:
        return pynvml.c_nvmlMemory_t(total=total, free=total - reserved - used, used=used + reserved)
    return pynvml.c_nvmlMemory_v2_t(total=total, reserved=reserved, free=total - reserved - used, used=used)


def _pci(handle: str) -> Any:
    info = pynvml.nvmlPciInfo_t()
    info.busId = BUS_IDS[handle]
    info.pciDeviceId = 0x233010DE
    info.pciSubSystemId = 0x16C110DE
    return info


def _nvlink(handle: str, link: int) -> int:
    if link >= 18:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
    return pynvml.NVML_FEATURE_ENABLED


def _field_values(handle: str, ids: list[Any]) -> Any:
    values = (pynvml.c_nvmlFieldValue_t * len(ids))()
    for position, requested in enumerate(ids):
        field_id, scope = requested if isinstance(requested, tuple) else (requested, 0)
        values[position].fieldId = field_id
        values[position].scopeId = scope
        if field_id == pynvml.NVML_FI_DEV_MEMORY_TEMP:
            values[position].nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
            continue
        values[position].nvmlReturn = pynvml.NVML_SUCCESS
        values[position].valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
        values[position].value.ullVal = FIELD_VALUES[field_id]
    return values


def _event(event_set: Any, timeout: int) -> Any:
    data = pynvml.c_nvmlEventData_t()
    data.eventType = pynvml.nvmlEventTypeXidCriticalError
    data.eventData = 79
    data.gpuInstanceId = 0xFFFFFFFF
    data.computeInstanceId = 0xFFFFFFFF
    return data


def _functions() -> dict[str, Any]:
    """A healthy two-GPU H100 node, call by call."""
    return {
        "nvmlInitWithFlags": mock.Mock(return_value=None),
        "nvmlShutdown": mock.Mock(return_value=None),
        "nvmlSystemGetDriverVersion": mock.Mock(return_value="570.86.15"),
        "nvmlSystemGetCudaDriverVersion": mock.Mock(return_value=12080),
        "nvmlSystemGetNVMLVersion": mock.Mock(return_value="12.570.86.15"),
        "nvmlDeviceGetCount": mock.Mock(return_value=2),
        "nvmlDeviceGetHandleByIndex": mock.Mock(side_effect=lambda i: HANDLES[i]),
        "nvmlDeviceGetUUID": mock.Mock(side_effect=lambda h: UUIDS[h]),
        "nvmlDeviceGetName": mock.Mock(return_value="NVIDIA H100 80GB HBM3"),
        "nvmlDeviceGetBrand": mock.Mock(return_value=pynvml.NVML_BRAND_NVIDIA),
        "nvmlDeviceGetSerial": mock.Mock(return_value="1650123456789"),
        "nvmlDeviceGetVbiosVersion": mock.Mock(side_effect=_nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)),
        "nvmlDeviceGetPciInfo": mock.Mock(side_effect=_pci),
        "nvmlDeviceGetMinorNumber": mock.Mock(side_effect=lambda h: HANDLES.index(h)),
        "nvmlDeviceGetMemoryInfo": mock.Mock(side_effect=_memory),
        "nvmlDeviceGetCudaComputeCapability": mock.Mock(return_value=(9, 0)),
        "nvmlDeviceGetMigMode": mock.Mock(return_value=[0, 1]),
        "nvmlDeviceGetGpuFabricInfoV": mock.Mock(side_effect=_nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)),
        "nvmlDeviceGetNvLinkState": mock.Mock(side_effect=_nvlink),
        "nvmlDeviceGetClockInfo": mock.Mock(
            side_effect=lambda h, t: {pynvml.NVML_CLOCK_SM: 1980, pynvml.NVML_CLOCK_MEM: 2619}[t]
        ),
        "nvmlDeviceGetTemperature": mock.Mock(return_value=33),
        "nvmlDeviceGetPowerUsage": mock.Mock(side_effect=_nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)),
        "nvmlDeviceGetUtilizationRates": mock.Mock(return_value=pynvml.c_nvmlUtilization_t(gpu=42, memory=17)),
        "nvmlDeviceGetEncoderUtilization": mock.Mock(return_value=[0, 167000]),
        "nvmlDeviceGetDecoderUtilization": mock.Mock(return_value=[3, 167000]),
        "nvmlDeviceGetFieldValues": mock.Mock(side_effect=_field_values),
        "nvmlEventSetCreate": mock.Mock(return_value="event-set"),
        "nvmlDeviceGetSupportedEventTypes": mock.Mock(return_value=0xFFFF),
        "nvmlDeviceRegisterEvents": mock.Mock(return_value=None),
        "nvmlEventSetWait": mock.Mock(side_effect=_nvml_error(pynvml.NVML_ERROR_TIMEOUT)),
        "nvmlEventSetFree": mock.Mock(return_value=None),
    }


@pytest.fixture
def calls(tmp_path: Path) -> Iterator[dict[str, Any]]:
    functions = _functions()
    with (
        mock.patch.multiple(pynvml, **functions),
        mock.patch(
            "gpu_operator.agents.nvml.selection.load_into_pynvml",
            return_value="/driver-root/usr/lib64/libnvidia-ml.so.1",
        ),
    ):
        yield functions


def _sysfs(tmp_path: Path) -> str:
    device = tmp_path / "bus/pci/devices/0000:18:00.0"
    device.mkdir(parents=True)
    (device / "class").write_text("0x030200\n")
    (device / "numa_node").write_text("0\n")
    return str(tmp_path)


def _open(tmp_path: Path, **kwargs: Any) -> Any:
    return open_nvml("auto", environ={}, sysfs_root=_sysfs(tmp_path), **kwargs)


def test_system_facts(calls: dict[str, Any], tmp_path: Path) -> None:
    nvml = _open(tmp_path)
    system = nvml.system()
    assert (system.driver_version, system.cuda_driver_version, system.device_count) == ("570.86.15", 12080, 2)
    assert (system.cuda_major, system.cuda_minor) == (12, 8)
    calls["nvmlInitWithFlags"].assert_called_once_with(0)


def test_inventory_decodes_pynvml_structures(calls: dict[str, Any], tmp_path: Path) -> None:
    first, second = _open(tmp_path).devices()
    assert first.uuid == "GPU-11111111-2222-3333-4444-555555555555"
    assert first.name == "NVIDIA H100 80GB HBM3"
    assert first.brand == "NVIDIA"
    assert first.serial == "1650123456789"
    assert first.vbios_version is None
    assert first.pci == PciInfo("00000000:18:00.0", 0x233010DE, 0x16C110DE, "0x030200", 0)
    assert second.pci == PciInfo("00000000:2A:00.0", 0x233010DE, 0x16C110DE, None, None)
    assert first.minor_number == 0
    assert first.memory == MemoryInfo(total=81559 * MIB, used=1024 * MIB, free=80023 * MIB, reserved=512 * MIB)
    assert first.compute_capability == ComputeCapability(9, 0)
    assert first.mig_mode == MigMode(current=False, pending=True)
    assert first.mig_devices == ()
    assert first.fabric is None
    assert first.nvlinks == (True,) * 18
    assert not first.lost


def test_init_without_library_names_where_it_looked(calls: dict[str, Any], tmp_path: Path) -> None:
    calls["nvmlInitWithFlags"].side_effect = _nvml_error(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    with pytest.raises(NvmlLibraryNotFound) as caught:
        _open(tmp_path, driver_root_paths=["/mnt/driver"])
    assert str(caught.value) == (
        "libnvidia-ml.so.1 not found under /mnt/driver, /driver-root, /run/nvidia/driver, /host "
        "nor by the dynamic loader"
    )


def test_init_without_driver_raises_driver_not_loaded(calls: dict[str, Any], tmp_path: Path) -> None:
    calls["nvmlInitWithFlags"].side_effect = _nvml_error(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    with pytest.raises(NvmlDriverNotLoaded):
        _open(tmp_path)


def test_init_failure_tolerated_gives_a_node_without_gpus(calls: dict[str, Any], tmp_path: Path) -> None:
    calls["nvmlInitWithFlags"].side_effect = _nvml_error(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    nvml = _open(tmp_path, fail_on_init_error=False)
    assert isinstance(nvml, EmptyNvml)
    assert isinstance(nvml.reason, NvmlDriverNotLoaded)
    assert nvml.devices() == ()
    assert nvml.sample() == ()
    assert nvml.system().device_count == 0


def test_unsupported_fields_are_none_and_not_asked_again(calls: dict[str, Any], tmp_path: Path) -> None:
    nvml = _open(tmp_path)
    first, _ = nvml.sample()
    assert first.power_usage_mw is None
    assert first.memory_temp_c is None
    assert first.gpu_temp_c == 33
    assert (first.sm_clock_mhz, first.memory_clock_mhz) == (1980, 2619)
    assert (first.gpu_util_percent, first.memory_util_percent) == (42, 17)
    assert (first.encoder_util_percent, first.decoder_util_percent) == (0, 3)
    assert first.total_energy_mj == 123_456_789
    assert first.pcie_replay_count == 3
    assert (first.ecc_sbe_aggregate, first.ecc_dbe_aggregate) == (5, 1)
    assert first.remapped_rows_correctable == 2
    assert (first.nvlink_tx_kib, first.nvlink_rx_kib) == (4_096, 8_192)
    assert calls["nvmlDeviceGetPowerUsage"].call_count == 2
    nvml.sample()
    assert calls["nvmlDeviceGetPowerUsage"].call_count == 2
    requested = calls["nvmlDeviceGetFieldValues"].call_args_list[-1].args[1]
    assert pynvml.NVML_FI_DEV_MEMORY_TEMP not in requested
    assert (pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 0xFFFFFFFF) in requested


def test_memory_falls_back_to_v1_on_old_drivers(calls: dict[str, Any], tmp_path: Path) -> None:
    def old_driver(handle: str, version: int | None = None) -> Any:
        if version is not None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        return _memory(handle)

    calls["nvmlDeviceGetMemoryInfo"].side_effect = old_driver
    first, _ = _open(tmp_path).devices()
    assert first.memory == MemoryInfo(total=81559 * MIB, used=1536 * MIB, free=80023 * MIB, reserved=None)


def test_a_lost_gpu_is_reported_and_the_others_keep_working(calls: dict[str, Any], tmp_path: Path) -> None:
    def name(handle: str) -> str:
        if handle == "handle-1":
            raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
        return "NVIDIA H100 80GB HBM3"

    calls["nvmlDeviceGetName"].side_effect = name
    nvml = _open(tmp_path)
    healthy, lost = nvml.devices()
    assert not healthy.lost and healthy.name == "NVIDIA H100 80GB HBM3"
    assert lost.lost and lost.uuid == "GPU-66666666-7777-8888-9999-000000000000" and lost.name is None
    first, second = nvml.sample()
    assert not first.lost and first.gpu_temp_c == 33
    assert second.lost and second.gpu_temp_c is None


def test_a_gpu_lost_while_sampling_only_spoils_its_own_sample(calls: dict[str, Any], tmp_path: Path) -> None:
    nvml = _open(tmp_path)
    nvml.devices()
    calls["nvmlDeviceGetTemperature"].side_effect = lambda h, s: (
        _nvml_error(pynvml.NVML_ERROR_GPU_IS_LOST)() if h == "handle-0" else 35
    )
    first, second = nvml.sample()
    assert first.lost and first.uuid == "GPU-11111111-2222-3333-4444-555555555555"
    assert not second.lost and second.gpu_temp_c == 35


def test_events_time_out_then_deliver_an_xid(calls: dict[str, Any], tmp_path: Path) -> None:
    nvml = _open(tmp_path)
    assert nvml.wait_event(10) is None
    assert calls["nvmlDeviceRegisterEvents"].call_args_list == [
        mock.call("handle-0", 0xB, "event-set"),
        mock.call("handle-1", 0xB, "event-set"),
    ]
    calls["nvmlEventSetWait"].side_effect = _event
    calls["nvmlDeviceGetUUID"].side_effect = lambda h: UUIDS["handle-1"] if isinstance(h, ctypes._Pointer) else UUIDS[h]
    event = nvml.wait_event(10)
    assert event is not None
    assert (event.kind, event.data, event.index) == (EventKind.XID, 79, 1)
    assert event.uuid == UUIDS["handle-1"]
    assert (event.gpu_instance_id, event.compute_instance_id) == (None, None)


def test_close_shuts_nvml_down_once(calls: dict[str, Any], tmp_path: Path) -> None:
    nvml = _open(tmp_path)
    nvml.wait_event(1)
    nvml.close()
    nvml.close()
    calls["nvmlShutdown"].assert_called_once_with()
    calls["nvmlEventSetFree"].assert_called_once_with("event-set")


def test_mig_devices_that_cannot_be_listed_leave_the_gpu_usable(calls: dict[str, Any], tmp_path: Path) -> None:
    calls["nvmlDeviceGetMigMode"].return_value = [1, 1]
    with mock.patch.object(
        pynvml, "nvmlDeviceGetMaxMigDeviceCount", side_effect=_nvml_error(pynvml.NVML_ERROR_UNKNOWN), create=True
    ):
        first, _ = _open(tmp_path).devices()
    assert first.mig_enabled and first.mig_devices == () and not first.lost


@pytest.mark.parametrize("code", [pynvml.NVML_ERROR_FUNCTION_NOT_FOUND, pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH])
def test_fabric_info_falls_back_to_the_legacy_call(calls: dict[str, Any], tmp_path: Path, code: int) -> None:
    # A driver without the versioned call, or one that knows a different version of its structure, still
    # answers the unversioned call.
    def legacy(handle: str, info: Any) -> None:
        info._obj.state = pynvml.NVML_GPU_FABRIC_STATE_COMPLETED
        info._obj.status = pynvml.NVML_SUCCESS
        info._obj.cliqueId = 7

    calls["nvmlDeviceGetGpuFabricInfoV"].side_effect = _nvml_error(code)
    with mock.patch.object(pynvml, "nvmlDeviceGetGpuFabricInfo", side_effect=legacy, create=True):
        first, _ = _open(tmp_path).devices()
    assert first.fabric is not None
    assert first.fabric.clique_id == 7
