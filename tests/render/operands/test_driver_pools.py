"""Driver pools with precompiled drivers: what nodes whose kernel the config does not list get."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import parse_config
from gpu_operator.render.operands import driver
from gpu_operator.render.operands.driver_pools import NFD_KERNEL, driver_pools
from tests.render.operands.helpers import assert_valid, container, pod_of, render_operand

KERNELS = ["5.15.0-1074-azure", "6.8.0-1021-azure"]
UBUNTU = {"id": "ubuntu", "versionId": "22.04", "kernelVersions": KERNELS}
RHEL = {"id": "rhel", "versionId": "9.4", "kernelVersions": ["5.14.0-427.13.1.el9_4.x86_64"]}


def _daemonsets(systems: list[dict[str, Any]], **cluster: Any) -> list[dict[str, Any]]:
    document = {
        "cluster": {"operatingSystems": systems, **cluster},
        "operator": {"driver": {"usePrecompiled": True}},
    }
    objects = render_operand(driver.render, document)
    assert_valid(objects)
    return [o for o in objects if o["kind"] == "DaemonSet"]


def _excluded(ds: dict[str, Any]) -> list[str] | None:
    affinity = pod_of(ds)["affinity"].get("nodeAffinity")
    if affinity is None:
        return None
    [term] = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    [expression] = term["matchExpressions"]
    assert (expression["key"], expression["operator"]) == (NFD_KERNEL, "NotIn")
    return expression["values"]


def test_unlisted_kernels_get_the_compiling_driver_by_default() -> None:
    """NVIDIA's `precompiledDriverDaemonsets` (controllers/object_controls.go) renders one precompiled DaemonSet per
    kernel it finds on the GPU nodes at every reconcile, so a node that boots a new kernel gets one. A render knows
    only the listed kernels: a node with another kernel (after an AKS node-image upgrade) must not be left
    without a driver, so by default the regular DaemonSet compiles the driver there, off the listed kernels."""
    daemonsets = _daemonsets([UBUNTU])
    assert [ds["metadata"]["name"] for ds in daemonsets] == [
        "nvidia-driver-daemonset-5.15.0-1074-azure-ubuntu22.04",
        "nvidia-driver-daemonset-6.8.0-1021-azure-ubuntu22.04",
        "nvidia-driver-daemonset",
    ]
    fallback = daemonsets[-1]
    assert fallback["metadata"]["labels"]["nvidia.com/precompiled"] == "false"
    assert container(fallback, "nvidia-driver-ctr")["image"] == "nvcr.io/nvidia/driver:595.91.07-ubuntu22.04"
    assert pod_of(fallback)["nodeSelector"] == {"nvidia.com/gpu.deploy.driver": "true"}
    assert _excluded(fallback) == KERNELS
    assert pod_of(fallback)["affinity"]["podAntiAffinity"] == pod_of(daemonsets[0])["affinity"]["podAntiAffinity"]
    for precompiled in daemonsets[:-1]:
        assert _excluded(precompiled) is None


def test_each_os_gets_its_compiling_pool_off_its_own_kernels() -> None:
    daemonsets = _daemonsets([UBUNTU, RHEL])
    fallbacks = {
        ds["metadata"]["name"]: ds for ds in daemonsets if ds["metadata"]["labels"]["nvidia.com/precompiled"] == "false"
    }
    assert list(fallbacks) == ["nvidia-driver-daemonset-ubuntu22.04", "nvidia-driver-daemonset-rhel9"]
    rhel = fallbacks["nvidia-driver-daemonset-rhel9"]
    assert pod_of(rhel)["nodeSelector"] == {
        "nvidia.com/gpu.deploy.driver": "true",
        "feature.node.kubernetes.io/system-os_release.ID": "rhel",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": "9",
    }
    assert _excluded(rhel) == ["5.14.0-427.13.1.el9_4.x86_64"]
    assert container(rhel, "nvidia-driver-ctr")["image"] == "nvcr.io/nvidia/driver:595.91.07-rhel9"


def test_none_leaves_unlisted_kernels_without_a_driver_as_chosen() -> None:
    daemonsets = _daemonsets([UBUNTU], unlistedKernels="none")
    assert [ds["metadata"]["labels"]["nvidia.com/precompiled"] for ds in daemonsets] == ["true", "true"]


def test_the_choice_is_part_of_the_config_and_checked() -> None:
    assert parse_config({}).cluster.unlisted_kernels == "compile"
    with pytest.raises(ValueError, match="cluster.unlistedKernels"):
        parse_config({"cluster": {"unlistedKernels": "skip"}})


def test_without_precompiled_drivers_nothing_changes() -> None:
    systems = parse_config({"cluster": {"operatingSystems": [UBUNTU]}}).cluster.operating_systems
    for compile_unlisted in (False, True):
        [pool] = driver_pools("nvidia-driver-daemonset", systems, False, compile_unlisted=compile_unlisted)
        assert (pool.name, pool.kernel, pool.excluded_kernels) == ("nvidia-driver-daemonset", None, ())
