"""Messages that say what was meant: the nearest name, the letter that only looks right, the section's own keys.

A newcomer's typos, as they come: a VM size without `Standard_`, a Cyrillic `Н` pasted into a size or a key, a
misspelt key (answered with its section's keys, not a general rule), a word of a fixed set in another case, and a
ClusterPolicy section written at the top of the document as NVIDIA's values file has it.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, GpuStackConfig, parse_config
from gpu_operator.config.key_hints import section_keys, section_model
from gpu_operator.config.suggestions import ascii_spelling, did_you_mean, lookalike_note, nearest

AKS = {"resourceGroup": "rg", "clusterName": "c", "kubernetesVersion": "1.34"}
TOP_LEVEL = ("namespace, cluster, agents, nfd, operator, configs, aks, pools, drivers, network, monitoring, dra, "
             "controller, remediation, registry")


def problems(document: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    return {p.path: p.message for p in caught.value.problems}


@pytest.mark.parametrize(("written", "meant"), [
    ("ND96isr_H100_v5", "Standard_ND96isr_H100_v5"),              # the prefix left out
    ("standard_nc4as_t4_v3", None),                                # another case is the same size to Azure
    ("Standard_ND96isr_\u041d100_v5", "Standard_ND96isr_H100_v5"),  # a Cyrillic EN for the H
    ("Standard_ND96isr_H100_v4", "Standard_ND96isr_H100_v5"),      # a close spelling
    ("Standard_NC4as_T4", "Standard_NC4as_T4_v3"),
])
def test_a_vm_size_is_answered_with_the_size_meant(written: str, meant: str | None) -> None:
    document = {"aks": AKS, "pools": [{"name": "gpu", "vmSize": written}], "network": {"enabled": False}}
    if meant is None:
        parse_config(document)
        return
    message = problems(document)["pools[0].vmSize"]
    assert message.startswith(f"{written!r} is not in the GPU VM size catalog: did you mean {meant!r}?")
    assert message.endswith("For a GPU size the catalog lacks, declare its GPUs under pools[0].gpu (model, count, "
                            "memoryGiB, and infiniband if it has IB NICs)")


def test_a_cpu_size_is_not_offered_a_gpu_size() -> None:
    document = {"aks": AKS, "pools": [{"name": "cpu", "vmSize": "Standard_D4s_v5"}]}
    assert problems(document)["pools[0].vmSize"].startswith(
        "'Standard_D4s_v5' is not in the GPU VM size catalog. For a GPU size")


def test_a_lookalike_letter_is_named_with_its_code_point() -> None:
    message = problems({"aks": AKS, "pools": [{"name": "gpu", "vmSize": "Standard_ND96isr_\u041d100_v5"}]})[
        "pools[0].vmSize"]
    assert "(it contains '\u041d' (U+041D CYRILLIC CAPITAL LETTER EN), which looks like 'H')" in message


@pytest.mark.parametrize(("document", "path", "message"), [
    ({"opertor": {}}, "opertor", f"unknown key; did you mean 'operator'? the top level takes: {TOP_LEVEL}"),
    ({"operator": {"driver": {"verison": "550"}}}, "operator.driver.verison",
     "unknown key; did you mean 'version'? operator.driver takes: repository, image, version,"),
    ({"network": {"sriovDevicePlugin": {"resourceNam": "ib"}}}, "network.sriovDevicePlugin.resourceNam",
     "unknown key; did you mean 'resourceName'? network.sriovDevicePlugin takes: resourcePrefix, resourceName, "
     "image, vendors, linkTypes"),
    ({"pools": [{"name": "a", "vmSize": "Standard_NC4as_T4_v3", "nodeCount": 2}], "aks": AKS}, "pools[0].nodeCount",
     "unknown key; pools[0] takes: name, vmSize, count,"),
    ({"configs": {"devicePlugin": {"a": {"sharing": {"timeslicing": {}}}}}}, "configs.devicePlugin.a.sharing.timeslicing",
     "unknown key; did you mean 'timeSlicing'? configs.devicePlugin.a.sharing takes: timeSlicing, mps"),
    ({"monitoring": {"threshold": {}}}, "monitoring.threshold",
     "unknown key; did you mean 'thresholds'? monitoring takes: enabled,"),
])
def test_an_unknown_key_lists_its_sections_keys_and_the_nearest(document: dict[str, Any], path: str,
                                                                message: str) -> None:
    assert problems(document)[path].startswith(message)


def test_an_unknown_key_with_a_lookalike_letter_says_which() -> None:
    assert problems({"n\u0430mespace": "gpu"})["n\u0430mespace"] == (
        f"unknown key; did you mean 'namespace'? the top level takes: {TOP_LEVEL} (it contains '\u0430' (U+0430 "
        "CYRILLIC SMALL LETTER A), which looks like 'a')")


@pytest.mark.parametrize("section", ["driver", "devicePlugin", "migManager", "daemonsets"])
def test_a_clusterpolicy_section_at_the_top_is_told_it_goes_under_operator(section: str) -> None:
    assert problems({section: {}})[section] == (
        f"unknown key at the top of the document: {section} is a ClusterPolicy section, which goes under operator: "
        f"(operator.{section}); the top level takes: {TOP_LEVEL}")


@pytest.mark.parametrize(("path", "value", "meant"), [
    ("operator.mig.strategy", "Mixed", "mixed"),
    ("operator.driver.kernelModuleType", "Open", "open"),
    ("pools.0.gpuDriver", "Operator", "operator"),
    ("network.mofed", "hots", "host"),
])
def test_a_word_of_a_fixed_set_is_answered_with_the_word_meant(path: str, value: str, meant: str) -> None:
    keys = path.split(".")
    document: Any = value
    for key in reversed(keys):
        document = [{"name": "a", "vmSize": "Standard_NC4as_T4_v3", **document}] if key == "0" else {key: document}
    if "pools" in document:
        document["aks"] = AKS
    shown = path.replace(".0.", "[0].")
    assert problems(document)[shown].endswith(f"(got {value!r}); did you mean {meant!r}?")


def test_a_lookalike_in_any_refused_text_is_named() -> None:
    message = problems({"namespace": "gpu\u2010operator"})["namespace"]
    assert message.endswith("(it contains '\u2010' (U+2010 HYPHEN), which looks like '-')")


@pytest.mark.parametrize(("text", "plain"), [
    ("\u041d100", "H100"), ("\uff11g.10gb", "1g.10gb"), ("gpu\u2013operator", "gpu-operator"),
    ("\u0391\u039a\u0405", "AKS"), ("team\u200b", "team"), ("plain", "plain"),
])
def test_ascii_spelling_replaces_what_only_looks_ascii(text: str, plain: str) -> None:
    assert ascii_spelling(text) == plain


def test_plain_text_has_no_lookalike_note_and_no_suggestion_when_nothing_is_close() -> None:
    assert lookalike_note("Standard_ND96isr_H100_v5") is None
    assert nearest("zzz", ["operator", "network"]) is None
    assert did_you_mean("zzz", ["operator"]) == ""


def test_the_key_walk_reaches_sections_through_lists_and_maps() -> None:
    assert section_model(GpuStackConfig, ["pools", 0, "autoscale"]).__name__ == "Autoscale"
    model = section_model(GpuStackConfig, ["configs", "devicePlugin", "any-name", "sharing"])
    assert model is not None and section_keys(model) == ["timeSlicing", "mps"]
    assert section_model(GpuStackConfig, ["operator", "driver", "version"]) is None  # a string, not a section


@pytest.mark.parametrize(("document", "path"), [
    ({"cluster": {"operatingSystems": [{"id": "ubuntu", "versionId": 22.04}]}},
     "cluster.operatingSystems[0].versionId"),
    ({"nfd": {"chartVersion": 3}}, "nfd.chartVersion"),
    ({"namespace": True}, "namespace"),
])
def test_a_number_or_boolean_where_text_goes_is_told_to_quote_it_as_written(document: dict[str, Any],
                                                                           path: str) -> None:
    """YAML reads `versionId: 22.10` as the number 22.1: quoting "as written" keeps the 0 the message cannot see."""
    assert problems(document)[path].endswith(
        "; quote the value as you wrote it (YAML read it as a number or a boolean)")


def test_a_duration_pattern_is_said_in_words() -> None:
    assert problems({"monitoring": {"thresholds": {"temperatureFor": "5 minutes"}}})[
        "monitoring.thresholds.temperatureFor"] == ("'5 minutes' is not a Prometheus duration: numbers with units y, "
                                                    "w, d, h, m, s or ms, such as '5m' or '1h30m'")
