"""Importing an NVIDIA ClusterPolicy manifest: the spec verbatim, NVIDIA's defaults for absent fields, errors."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ClusterPolicySpec, ConfigError, parse_config
from gpu_operator.config.importers import import_clusterpolicy, import_helm_values
from tests.config.importers.values_files import V26, chart_values

#: the sections the CRD requires a ClusterPolicy spec to have
REQUIRED = (
    "daemonsets", "dcgm", "dcgmExporter", "devicePlugin", "driver", "gfd", "nodeStatusExporter", "operator", "toolkit",
)


def manifest(spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
            "spec": spec, **extra}


def minimal_spec(**sections: Any) -> dict[str, Any]:
    return {**{section: {} for section in REQUIRED}, **sections}


def problems(data: Any) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        import_clusterpolicy(data)
    assert caught.value.source == "ClusterPolicy manifest"
    return {p.path: p.message for p in caught.value.problems}


def test_spec_goes_into_operator_verbatim() -> None:
    spec = minimal_spec(driver={"version": "550.90.07", "rdma": {"enabled": True}}, mig={"strategy": "mixed"},
                        devicePlugin={"config": {"name": "plugin-config", "default": "any"}})
    document = import_clusterpolicy(manifest(spec))
    assert document["operator"]["driver"]["version"] == "550.90.07"
    assert document["operator"]["devicePlugin"] == {"config": {"name": "plugin-config", "default": "any"}}
    config = parse_config(document)
    assert config.operator.driver.rdma.enabled is True
    assert config.operator.mig.strategy == "mixed"


def test_absent_fields_get_nvidias_defaults_where_they_differ_from_the_chart() -> None:
    config = parse_config(import_clusterpolicy(manifest(minimal_spec())))
    spec = config.operator
    assert spec.dcgm.enabled is True
    assert spec.driver.upgrade_policy.auto_upgrade is False
    assert spec.dcgm_exporter.service_monitor.enabled is False
    assert spec.mig.strategy == "none"
    assert spec.driver.licensing_config.nls_enabled is False
    sandbox = (spec.vgpu_device_manager, spec.vfio_manager, spec.sandbox_device_plugin, spec.kata_sandbox_device_plugin,
               spec.cc_manager)
    assert [operand.enabled for operand in sandbox] == [False] * 5
    # where the operator and the chart agree, the chart default stands
    assert (spec.driver.enabled, spec.device_plugin.enabled, spec.mig_manager.enabled) == (True, True, True)
    assert spec.cdi.enabled is True and spec.node_status_exporter.enabled is False


def test_values_in_the_spec_win_over_the_defaults() -> None:
    spec = minimal_spec(dcgm={"enabled": False}, driver={"upgradePolicy": {"autoUpgrade": True}},
                        dcgmExporter={"serviceMonitor": {"enabled": True, "interval": "30s"}},
                        vfioManager={"enabled": True})
    document = import_clusterpolicy(manifest(spec))
    config = parse_config({**document, "cluster": {"prometheusOperator": True}})
    assert config.operator.dcgm.enabled is False
    assert config.operator.driver.upgrade_policy.auto_upgrade is True
    monitor = config.operator.dcgm_exporter.service_monitor
    # NVIDIA's `enabled: true` is "where the ServiceMonitor CRD exists": our unset switch
    assert (monitor.enabled, monitor.interval) == (None, "30s")
    assert config.operator.vfio_manager.enabled is True


def test_a_null_section_counts_as_absent() -> None:
    config = parse_config(import_clusterpolicy(manifest(minimal_spec(dcgm=None))))
    assert config.operator.dcgm.enabled is True


def test_the_clusterpolicy_the_chart_renders_imports_to_the_same_config() -> None:
    helm = import_helm_values(chart_values(V26))
    spec = parse_config(helm).operator.to_document()
    # the chart renders `enabled: true` ("where the CRD exists"), which our document leaves unset
    spec["dcgmExporter"]["serviceMonitor"]["enabled"] = True
    assert parse_config(import_clusterpolicy(manifest(spec))).operator == ClusterPolicySpec()


def test_metadata_and_status_are_dropped() -> None:
    document = import_clusterpolicy(manifest(minimal_spec(), status={"state": "ready", "namespace": "gpu-operator"}))
    assert set(document) == {"namespace", "operator"}


def test_namespace_is_the_callers() -> None:
    assert import_clusterpolicy(manifest(minimal_spec()), namespace="nvidia-gpu")["namespace"] == "nvidia-gpu"


def test_wrong_api_version_and_kind() -> None:
    found = problems({"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "spec": {}})
    assert set(found) == {"apiVersion", "kind"}
    assert "nvidia.com/v1" in found["apiVersion"] and "ClusterPolicy" in found["kind"]


def test_manifest_shape_problems() -> None:
    assert set(problems({**manifest({}), "extra": 1})) == {"extra"}
    assert set(problems({**manifest({}), "spec": ["driver"]})) == {"spec"}
    assert set(problems(["ClusterPolicy"])) == {""}


def test_spec_problems_are_reported_under_spec() -> None:
    found = problems(manifest(minimal_spec(driver={"verison": "1"}, mig={"strategy": "maybe"},
                                           toolkit={"env": [{"name": "CONTAINERD_CONFIG", "value": "relative"}]})))
    assert set(found) == {"spec.driver.verison", "spec.mig.strategy"}
    # cross-section rules run once the fields are valid
    found = problems(manifest(minimal_spec(toolkit={"env": [{"name": "CONTAINERD_CONFIG", "value": "relative"}]})))
    assert set(found) == {"spec.toolkit.env[0].value"}
