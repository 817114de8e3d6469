"""Drivers of their own (`drivers`, `pools[].driver`): every rule fails with its key and the fix, and passes once
fixed; and what each pool's driver must fit (DRA, GPU generation, precompiled kernels, GDS, peermem, vGPU)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.facts.gpu_kernel_modules import module_support
from tests.config.test_errors import H100, T4, problems_of, with_pools

DRIVER = {"version": "580.95.05"}
UBUNTU_2204_KERNELS = {"cluster": {"operatingSystems": [
    {"id": "ubuntu", "versionId": "22.04", "kernelVersions": ["5.15.0-1074-azure"]}]}}
#: Azure's ND GB200 v6 is not in the VM size catalog: its GPUs are declared (GB200, PCI device 0x2941)
GB200 = {"name": "gb200", "vmSize": "Standard_ND128isr_NDR_GB200_v6",
         "gpu": {"model": "GB200", "count": 4, "memoryGiB": 186, "pciDeviceId": "0x2941"}}
V100 = {"name": "v100", "vmSize": "Standard_ND40rs_v2",
        "gpu": {"model": "V100-SXM2-32GB", "count": 8, "memoryGiB": 32, "pciDeviceId": "0x1DB6"}}
#: an NVads A10 v5 VM sees a share of an A10 through the host's vGPU manager
A10_VGPU = {"name": "a10", "vmSize": "Standard_NV36ads_A10_v5",
            "gpu": {"model": "A10", "count": 1, "memoryGiB": 24, "vgpu": True}}
VGPU_GUEST = {"driverType": "vgpu", "repository": "registry.example.com/nvidia", "image": "vgpu-guest-driver",
              "version": "580.95.05", "licensingConfig": {"secretName": "licensing"}}
CRD = {"driver": {"useNvidiaDriverCRD": True}}


def pool(base: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**base, **fields}


# (check, failing document, path of its problem, a passing document)
DRIVER_CASES: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("_driver_needs_the_operator_driver", with_pools(pool(T4, driver=DRIVER), operator={"driver": {"enabled": False}}),
     "pools[0].driver", with_pools(T4, operator={"driver": {"enabled": False}})),
    ("_pool_names_a_known_driver", with_pools(pool(T4, driver="canary")), "pools[0].driver",
     with_pools(pool(T4, driver="canary"), drivers={"canary": DRIVER})),
    ("_pool_names_a_known_driver", with_pools(pool(T4, driver=DRIVER), drivers={"t4": {"nodeSelector": {"a": "b"}}}),
     "pools[0].driver", with_pools(pool(T4, driver="t4"), drivers={"t4": DRIVER})),
    ("_pool_names_a_known_driver", with_pools(pool(T4, workload="vm-passthrough", driver=DRIVER),
                                              operator={"sandboxWorkloads": {"enabled": True}}),
     "pools[0].driver", with_pools(pool(T4, workload="vm-passthrough"), operator={"sandboxWorkloads": {"enabled": True}})),
    ("_names_fit", with_pools(pool(T4, driver="Canary"), drivers={"Canary": DRIVER}), "drivers.Canary",
     with_pools(pool(T4, driver="canary"), drivers={"canary": DRIVER})),
    # NVIDIA's CRD: "default NVIDIADriver must not use nodeSelector"; its validator: one default at most
    ("_defaults", {"drivers": {"base": {"default": True}}}, "drivers.base.default",
     {"operator": CRD, "drivers": {"base": {"default": True}}}),
    ("_defaults", {"operator": CRD, "drivers": {"a": {"default": True}, "b": {"default": True}}}, "drivers.b.default",
     {"operator": CRD, "drivers": {"a": {"default": True}, "b": {"nodeSelector": {"team": "b"}}}}),
    ("_defaults", {"operator": CRD, "drivers": {"default": {"nodeSelector": {"team": "b"}}}}, "drivers.default",
     {"operator": CRD, "drivers": {"team-b": {"nodeSelector": {"team": "b"}}}}),
    ("_group_selects_nodes", with_pools(T4, drivers={"spare": DRIVER}), "drivers.spare",
     with_pools(T4, drivers={"spare": {**DRIVER, "nodeSelector": {"team": "spare"}}})),
    # internal/validator: "multiple NVIDIADrivers match the same node"
    ("_selectors_do_not_overlap", {"drivers": {"a": {"nodeSelector": {"team": "a"}}, "b": {"nodeSelector": {"gpu": "x"}}}},
     "drivers.b.nodeSelector", {"drivers": {"a": {"nodeSelector": {"team": "a"}}, "b": {"nodeSelector": {"team": "b"}}}}),
    ("_pools_match_their_driver_only", with_pools(pool(T4, labels={"team": "a"}),
                                                  drivers={"a": {**DRIVER, "nodeSelector": {"team": "a"}}}),
     "pools[0]", with_pools(pool(T4, labels={"team": "a"}, driver="a"),
                            drivers={"a": {**DRIVER, "nodeSelector": {"team": "a"}}})),
    ("_pools_match_their_driver_only", with_pools(pool(T4, driver="a"),
                                                  drivers={"a": {**DRIVER, "nodeSelector": {"team": "a"}}}),
     "pools[0].driver", with_pools(pool(T4, driver="a", labels={"team": "a"}),
                                   drivers={"a": {**DRIVER, "nodeSelector": {"team": "a"}}})),
    ("_renderable", with_pools(pool(T4, driver={"driverType": "vgpu-host-manager"})), "pools[0].driver.driverType",
     with_pools(pool(T4, driver={"driverType": "gpu"}))),
    ("_renderable", with_pools(pool(T4, driver={"repository": ""})), "pools[0].driver.repository",
     with_pools(pool(T4, driver={"repository": "", "version": "", "image": "registry.example.com/driver:580-a"}))),
    ("_renderable", with_pools(pool(T4, driver={"repoConfig": {"name": "repos"}})), "pools[0].driver.repoConfig.name",
     with_pools(pool(T4, driver={"repoConfig": {"name": ""}}))),
    # the DRA driver's prerequisites, per pool: R565 to allocate GPUs
    ("_dra_floors", with_pools(pool(H100, gpuAllocation="dra", driver={"version": "560.35.03"}),
                               dra={"computeDomains": False}),
     "pools[0].driver.version", with_pools(pool(H100, gpuAllocation="dra", driver={"version": "565.57.01"}),
                                           dra={"computeDomains": False})),
    ("_modules_fit_the_gpu", with_pools(pool(GB200, driver={"kernelModuleType": "proprietary"})),
     "pools[0].driver.kernelModuleType", with_pools(pool(GB200, driver={"kernelModuleType": "open"}))),
    ("_modules_fit_the_gpu", with_pools(GB200, operator={"driver": {"kernelModuleType": "proprietary"}}),
     "operator.driver.kernelModuleType", with_pools(GB200, operator={"driver": {"kernelModuleType": "auto"}})),
    ("_modules_fit_the_gpu", with_pools(pool(V100, driver={"kernelModuleType": "open"})),
     "pools[0].driver.kernelModuleType", with_pools(pool(V100, driver={"kernelModuleType": "proprietary"}))),
    ("_precompiled", with_pools(pool(T4, driver={"usePrecompiled": True, "version": "570"})), "cluster.operatingSystems",
     with_pools(pool(T4, driver={"usePrecompiled": True, "version": "570"}), **UBUNTU_2204_KERNELS)),
    ("_precompiled", with_pools(pool(T4, driver={"usePrecompiled": True, "version": "570",
                                                 "gdrcopy": {"enabled": True}}), **UBUNTU_2204_KERNELS),
     "pools[0].driver.gdrcopy.enabled", with_pools(pool(T4, driver={"usePrecompiled": True, "version": "570"}),
                                                   **UBUNTU_2204_KERNELS)),
    ("_precompiled", {"drivers": {"lab": {"usePrecompiled": True, "version": "570", "nodeSelector": {"team": "lab"}}}},
     "cluster.operatingSystems", {"drivers": {"lab": {"usePrecompiled": True, "version": "570",
                                                      "nodeSelector": {"team": "lab"}}}, **UBUNTU_2204_KERNELS}),
    # nvidiadriver_controller.go: GDS from MinimumGDSVersionForOpenRM (v2.17.5) only with kernelModuleType open
    ("_gds_needs_open_modules", with_pools(pool(T4, driver={"gds": {"enabled": True}})), "pools[0].driver.gds.enabled",
     with_pools(pool(T4, driver={"gds": {"enabled": True}, "kernelModuleType": "open"}))),
    ("_peermem_pairs_with_mofed", with_pools(H100, pool(T4, driver={"rdma": {"enabled": True}})),
     "pools[1].driver.rdma.enabled", with_pools(pool(H100, driver={"rdma": {"enabled": True}}), T4)),
    ("_peermem_pairs_with_mofed", with_pools(pool(H100, driver={"rdma": {"enabled": True, "useHostMofed": True}})),
     "pools[0].driver.rdma.useHostMofed",
     with_pools(pool(H100, driver={"rdma": {"enabled": True, "useHostMofed": True}}), network={"mofed": "host"})),
    ("_vgpu_on_vgpu_pools", with_pools(pool(T4, driver=VGPU_GUEST)), "pools[0].driver.driverType",
     with_pools(pool(A10_VGPU, driver=VGPU_GUEST))),
    ("_vgpu_on_vgpu_pools", with_pools(A10_VGPU), "pools[0].driver", with_pools(pool(A10_VGPU, driver=VGPU_GUEST))),
    ("_vgpu_on_vgpu_pools", with_pools(pool(A10_VGPU, driver={**VGPU_GUEST, "licensingConfig": {"secretName": ""}})),
     "pools[0].driver.licensingConfig", with_pools(pool(A10_VGPU, driver=VGPU_GUEST))),
    ("_vgpu_on_vgpu_pools", with_pools(pool(A10_VGPU, driver={"driverType": "vgpu",
                                                              "licensingConfig": {"secretName": "licensing"}})),
     "pools[0].driver.image", with_pools(pool(A10_VGPU, driver=VGPU_GUEST))),
]


@pytest.mark.parametrize("check, failing, path, passing", DRIVER_CASES, ids=[f"{c[0]}-{c[2]}" for c in DRIVER_CASES])
def test_driver_rule(check: str, failing: dict[str, Any], path: str, passing: dict[str, Any]) -> None:
    assert [p.path for p in problems_of(failing)] == [path]
    parse_config(passing)


@pytest.mark.parametrize(("device", "support"), [
    (0x1DB6, "proprietary-only"),  # V100 32GB (GV100): before Turing, absent from the open modules' table
    (0x1EB8, "both"),  # Tesla T4 (TU104): the open modules' table from TITAN RTX 0x1E02 on
    (0x2330, "both"),  # H100 SXM5
    (0x2342, "open-only"),  # GH200: Grace Hopper
    (0x2901, "open-only"),  # B200
    (0x31C2, "open-only"),  # GB300
    (0x28E3, "both"),  # the last Ada Lovelace id of the table before Blackwell's 0x2901
])
def test_which_kernel_modules_a_gpu_runs(device: int, support: str) -> None:
    """NVIDIA/open-gpu-kernel-modules README "Compatible GPUs" (595.45.04): Turing (0x1E02) and later; the NVIDIA
    driver README's open kernel modules chapter: Blackwell and Grace Hopper only with the open modules."""
    assert module_support(device) == support


def test_every_problem_of_the_drivers_is_listed_at_once() -> None:
    document = with_pools(pool(T4, driver="nope"), pool(GB200, driver={"kernelModuleType": "proprietary"}),
                          drivers={"a": {"nodeSelector": {"team": "a"}}, "b": {"nodeSelector": {"gpu": "x"}}})
    assert {p.path for p in problems_of(document)} == {
        "pools[0].driver", "pools[1].driver.kernelModuleType", "drivers.b.nodeSelector"}


def test_an_inherited_value_is_named_where_it_is_written() -> None:
    """The cluster's driver version reaches a pool that names a driver without its own: the problem is the
    cluster's key, and says which pool runs it."""
    document = with_pools(pool(H100, gpuAllocation="dra", driver={"kernelModuleType": "open"}),
                          dra={"computeDomains": False}, operator={"driver": {"version": "560.35.03"}})
    [problem] = problems_of(document)
    assert problem.path == "operator.driver.version"
    assert "pools[0] (h100), which runs pools[0].driver" in problem.message


def test_the_cluster_driver_is_judged_on_its_own_pools_only() -> None:
    """A DRA pool on a driver of its own lets the cluster's older driver serve the device-plugin pools."""
    document = with_pools(pool(H100, gpuAllocation="dra", driver={"version": "580.95.05"}), T4,
                          dra={"computeDomains": False}, operator={"driver": {"version": "550.163.01"}})
    parse_config(document)
    with pytest.raises(ConfigError):
        parse_config(with_pools(pool(H100, gpuAllocation="dra"), T4, dra={"computeDomains": False},
                                operator={"driver": {"version": "550.163.01"}}))
