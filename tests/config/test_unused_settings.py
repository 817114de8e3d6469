"""Settings of components the document does not deploy are named in a note, never dropped without a word.

Each case writes keys for a component that stays off and expects one note naming them, why they have no effect
and, where there is one, the switch that deploys the component; the same keys with the component deployed give no
note. The CLI prints the notes on stderr (tests/cli/test_newcomer_notes.py covers the printing).
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import parse_config
from gpu_operator.config.unused_settings import UNUSED_SECTIONS, unused_setting_notes

AKS = {"resourceGroup": "rg", "clusterName": "c", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}
T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}
AGENTS = {"image": {"repository": "registry.example.com/gpu-operator-agents", "tag": "0.1.0"}}


def notes(document: dict[str, Any]) -> list[str]:
    return unused_setting_notes(parse_config(document))


CASES = [
    pytest.param(
        {"network": {"ofedDriver": {"env": [{"name": "A", "value": "b"}]}, "mofed": "host"}},
        "network.mofed, network.ofedDriver have no effect: no pool has InfiniBand, so the Network Operator is not "
        "deployed; set network.enabled: true to deploy it anyway",
        {"network": {"enabled": True, "vfDeviceIds": ["101e"], "mofed": "host",
                     "ofedDriver": {"env": [{"name": "A", "value": "b"}]}}},
        id="network without an InfiniBand pool"),
    pytest.param(
        {"aks": AKS, "pools": [H100], "network": {"enabled": False, "ipoib": {"ipam": '{"type": "whereabouts"}'}}},
        "network.ipoib has no effect: network.enabled is false, so the Network Operator is not deployed",
        {"aks": AKS, "pools": [H100], "network": {"ipoib": {"ipam": '{"type": "whereabouts"}'}}},
        id="network turned off"),
    pytest.param(
        {"dra": {"namespaces": {"ml": "existing"}}},
        "dra.namespaces has no effect: no pool has gpuAllocation: dra, so the DRA driver is not deployed; set it on "
        "a pool to deploy it",
        {"aks": AKS, "pools": [{**H100, "gpuAllocation": "dra"}], "network": {"enabled": False},
         "dra": {"namespaces": {"ml": "existing"}}},
        id="dra namespaces with DRA off"),
    pytest.param(
        {"operator": {"driver": {"upgradePolicy": {"maxParallelUpgrades": 2, "drain": {"enable": True}}}}},
        "operator.driver.upgradePolicy.drain has no effect: the operator controller does not run (it needs "
        "agents.image or agents.build, and controller.enabled not false): the driver DaemonSet rolls a new driver "
        "out by itself (autoUpgrade, maxParallelUpgrades and maxUnavailable apply to it), and nothing waits for "
        "jobs, times the GPU pod deletion or drains a node as the controller does",
        {"agents": AGENTS, "operator": {"driver": {"upgradePolicy": {"maxParallelUpgrades": 2, "drain": {
            "enable": True}}}}},
        id="the controller's upgrade steps without the controller"),
    pytest.param(
        {"agents": AGENTS, "operator": {"driver": {"enabled": False, "upgradePolicy": {"autoUpgrade": False}}}},
        "operator.driver.upgradePolicy has no effect: operator.driver.enabled is false, so there is no driver to "
        "upgrade",
        {"agents": AGENTS, "operator": {"driver": {"upgradePolicy": {"autoUpgrade": False}}}},
        id="upgradePolicy without a driver"),
    pytest.param(
        {"agents": AGENTS, "controller": {"enabled": False, "resyncSeconds": 60}},
        "controller.resyncSeconds has no effect: the operator controller does not run (it needs agents.image or "
        "agents.build, and controller.enabled not false)",
        {"agents": AGENTS, "controller": {"resyncSeconds": 60}},
        id="controller settings with the controller off"),
    pytest.param(
        {"aks": AKS, "pools": [H100], "nfd": {"chartVersion": "0.19.1"}},
        "nfd.chartVersion has no effect: the Network Operator runs its own Node Feature Discovery in place of this "
        "one",
        {"aks": AKS, "pools": [T4], "nfd": {"chartVersion": "0.19.1"}},
        id="nfd while the Network Operator's runs"),
    pytest.param(
        {"monitoring": {"enabled": False, "thresholds": {"gpuTemperatureCelsius": 80}}},
        "monitoring.thresholds has no effect: monitoring.enabled is false, so no alert, rule or dashboard is "
        "rendered",
        {"monitoring": {"thresholds": {"gpuTemperatureCelsius": 80}}},
        id="monitoring thresholds with monitoring off"),
]


@pytest.mark.parametrize(("unused", "note", "used"), CASES)
def test_keys_of_a_component_that_is_not_deployed_get_one_note(unused: dict[str, Any], note: str,
                                                               used: dict[str, Any]) -> None:
    assert notes(unused) == [note]
    assert notes(used) == []


def test_every_section_of_the_table_has_a_case() -> None:
    covered = {"network", "dra", "operator.driver", "operator.driver.upgradePolicy", "controller", "nfd", "monitoring"}
    assert {entry.section for entry in UNUSED_SECTIONS} == covered


@pytest.mark.parametrize("document", [
    {},
    {"nfd": {"enabled": False, "nodefeaturerules": True}},  # the rules serve any NFD, the Network Operator's too
    {"network": {"enabled": False}, "dra": {"enabled": False}, "controller": {"enabled": False}},
])
def test_switches_and_keys_that_apply_anyway_get_no_note(document: dict[str, Any]) -> None:
    assert notes(document) == []
