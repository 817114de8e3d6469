"""Node Feature Discovery: the chart values and the kernel-module NodeFeatureRule."""

from __future__ import annotations

from gpu_operator.config import parse_config
from gpu_operator.render.nfd import KERNEL_MODULE_LABELS, nfd_chart, node_feature_rules
from tests.support.schemas import crd_errors

AKS_TAINT = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


def test_chart_reference_and_namespace() -> None:
    chart = nfd_chart(parse_config({"namespace": "gpu"}))
    assert chart is not None
    assert (chart.chart, chart.version, chart.namespace) == (
        "oci://registry.k8s.io/nfd/charts/node-feature-discovery", "0.19.0", "gpu"
    )


def test_values_label_pci_devices_by_vendor_and_allow_nvidia_labels() -> None:
    values = nfd_chart(parse_config({})).values  # type: ignore[union-attr]
    pci = values["worker"]["config"]["sources"]["pci"]
    assert pci == {"deviceClassWhitelist": ["02", "0200", "0207", "0300", "0302"], "deviceLabelFields": ["vendor"]}
    assert values["master"]["config"]["extraLabelNs"] == ["nvidia.com"]
    assert values["master"]["serviceAccount"] == {"name": "node-feature-discovery", "create": True}
    assert values["worker"]["serviceAccount"] == {"name": "node-feature-discovery", "create": False}
    assert values["priorityClassName"] == "system-node-critical"


def test_worker_tolerates_the_operands_taints_once() -> None:
    config = parse_config({"operator": {"daemonsets": {"tolerations": [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, AKS_TAINT,
    ]}}})
    tolerations = nfd_chart(config).values["worker"]["tolerations"]  # type: ignore[union-attr]
    assert tolerations == [
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        AKS_TAINT,
    ]
    assert AKS_TAINT not in config.nfd.values["worker"]["tolerations"]


def test_user_values_replace_the_defaults() -> None:
    config = parse_config({"nfd": {"chartVersion": "0.18.3", "values": {"worker": {"tolerations": []}}}})
    chart = nfd_chart(config)
    assert chart is not None and chart.version == "0.18.3"
    assert chart.values == {"worker": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                         "effect": "NoSchedule"}]}}


def test_disabled_means_no_chart() -> None:
    assert nfd_chart(parse_config({"nfd": {"enabled": False}})) is None


def test_kernel_module_rule_only_when_asked_and_valid_against_the_crd() -> None:
    assert node_feature_rules(parse_config({})) == []
    [rule] = node_feature_rules(parse_config({"nfd": {"nodefeaturerules": True}}))
    assert (rule["kind"], rule["metadata"]["name"]) == ("NodeFeatureRule", "nvidia-kernel-modules")
    labels = {label for r in rule["spec"]["rules"] for label in r["labels"]}
    assert labels == set(KERNEL_MODULE_LABELS.values()) == {
        "nvidia.com/gdrcopy.capable", "nvidia.com/gds.capable", "nvidia.com/peermem.capable",
    }
    modules = {m for r in rule["spec"]["rules"] for f in r["matchFeatures"] for m in f["matchExpressions"]}
    assert modules == {"gdrdrv", "nvidia_fs", "nvidia_peermem"}
    assert all(f["feature"] == "kernel.loadedmodule" for r in rule["spec"]["rules"] for f in r["matchFeatures"])
    assert crd_errors(rule) == []


def test_kernel_module_rule_matches_nvidia_chart() -> None:
    """NVIDIA's chart template deployments/gpu-operator/templates/nodefeaturerules.yaml (v26.7.0): rules
    `kernel-module-<module>` named after the module as loaded (underscores kept), labelling
    `nvidia.com/{gdrcopy,gds,peermem}.capable=true`."""
    [rule] = node_feature_rules(parse_config({"nfd": {"nodefeaturerules": True}}))
    assert rule["spec"]["rules"] == [
        {"name": f"kernel-module-{module}", "labels": {label: "true"},
         "matchFeatures": [{"feature": "kernel.loadedmodule", "matchExpressions": {module: {"op": "Exists"}}}]}
        for module, label in (
            ("gdrdrv", "nvidia.com/gdrcopy.capable"),
            ("nvidia_fs", "nvidia.com/gds.capable"),
            ("nvidia_peermem", "nvidia.com/peermem.capable"),
        )
    ]
