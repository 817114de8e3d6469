"""A value with a trailing newline is not the value: every pattern that checks input matches the whole text.

Python's `$` also matches before a final `\\n`, so `re.match(r"^[a-z]+$", "gpu\\n")` succeeds, while the program that
reads the value later (the API server, Helm, the device plugin, Azure) refuses it or reads another value. Patterns
anchor at `\\Z` (or run through `fullmatch`) instead; pydantic's `pattern=` runs in its Rust engine, whose `$` is the
end of the text. Each field below is tested at the value and one character past it (the value and a newline).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

import gpu_operator
from gpu_operator.agents.device_plugin.cdi_spec import spec_problems
from gpu_operator.agents.metrics_exporter.attribution import device_keys
from gpu_operator.agents.plugin_config import PluginConfigError, parse_plugin_config
from gpu_operator.aks.node_images import kubernetes_minor
from gpu_operator.config import ConfigError, parse_config
from gpu_operator.facts.dra_cel import CelError, SemVer, evaluate, parse_quantity
from gpu_operator.manifests import write_files
from gpu_operator.policy.resources import _seconds

PACKAGE = Path(gpu_operator.__file__).parent
#: Files the rule does not hold for (none now).
ELSEWHERE: set[str] = set()
_RE_CALLS = {"compile", "match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer"}


def _pattern_text(node: ast.expr) -> str | None:
    """The literal text of a pattern argument (implicitly joined strings and f-strings' literal parts)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value for part in node.values if isinstance(part, ast.Constant))
    return None


def _dollar_anchors(text: str) -> bool:
    """Whether the pattern uses `$` as an anchor (not escaped, not inside a character class)."""
    escaped = in_class = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            return True
    return False


def _anchored_patterns() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where in ELSEWHERE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RE_CALLS
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args):
                text = _pattern_text(node.args[0])
                if text is not None and _dollar_anchors(text):
                    found.append(f"{where}:{node.lineno}: {text!r}")
    return found


def test_no_pattern_of_the_package_anchors_with_dollar() -> None:
    assert _anchored_patterns() == []


@pytest.mark.parametrize(("text", "anchored"), [
    (r"^[a-z]+$", True), (r"^a$|^b\Z", True), (r"^[a-z$]+\Z", False), (r"^\$[0-9]+\Z", False), (r"^a\Z", False),
])
def test_the_check_tells_a_dollar_anchor_from_a_literal_dollar(text: str, anchored: bool) -> None:
    assert _dollar_anchors(text) is anchored


# --- config: each field at the value and at the value with a newline ---------------------------------------------

SUBNET = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/"
          "virtualNetworks/vnet/subnets/gpu")
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "count": 1}


def _mig_configs(profile: str = "1g.10gb", device_filter: str | None = None) -> dict[str, Any]:
    layout: dict[str, Any] = {"devices": "all", "mig-enabled": True, "mig-devices": {profile: 1}}
    if device_filter is not None:
        layout["device-filter"] = device_filter
    return {"operator": {"migManager": {"config": {"name": "custom-mig", "default": "one"}}},
            "configs": {"migManager": {"version": "v1", "mig-configs": {"one": [layout]}}}}


CONFIG_FIELDS = [
    # (document for a value, the value, the path its problem is told at)
    (lambda v: {"monitoring": {"prometheusRelease": v}}, "kube-prometheus-stack", "monitoring.prometheusRelease"),
    (lambda v: {"configs": {"dcgmExporter": [{"field": v, "type": "gauge", "help": "GPU temperature."}]},
                "operator": {"dcgmExporter": {"config": {"name": "metrics"}}}},
     "DCGM_FI_DEV_GPU_TEMP", "configs.dcgmExporter"),
    (lambda v: {"pools": [{**H100, "vnetSubnetID": v}]}, SUBNET, "pools[0].vnetSubnetID"),
    (lambda v: {"pools": [{**H100, "orchestratorVersion": v}], "aks": {"resourceGroup": "rg", "clusterName": "c",
                                                                        "location": "westeurope",
                                                                        "kubernetesVersion": "1.34"}},
     "1.34", "pools[0].orchestratorVersion"),
    (lambda v: _mig_configs(profile=v), "1g.10gb", "configs.migManager.mig-configs.one[0].mig-devices"),
    (lambda v: _mig_configs(device_filter=v), "0x233010DE", "configs.migManager.mig-configs.one[0].device-filter"),
]


def _problems(document: dict[str, Any]) -> dict[str, str]:
    try:
        parse_config(document)
    except ConfigError as error:
        return {problem.path: problem.message for problem in error.problems}
    return {}


@pytest.mark.parametrize(("document", "value", "path"), CONFIG_FIELDS, ids=[f[2] for f in CONFIG_FIELDS])
def test_a_config_field_takes_the_value_and_refuses_it_with_a_newline(document: Any, value: str, path: str) -> None:
    assert not [p for p in _problems(document(value)) if p.startswith(path)], _problems(document(value))
    assert [p for p in _problems(document(value + "\n")) if p.startswith(path)], _problems(document(value + "\n"))


def test_a_kubernetes_version_is_read_whole() -> None:
    assert kubernetes_minor("1.34") == 34
    for refused in ("1.34\n", "1.3\u0664"):  # and digits of another script, which Python's \d takes
        with pytest.raises(ValueError, match="not a Kubernetes version"):
            kubernetes_minor(refused)


# --- the ground floor: CEL's semver and quantity, as Kubernetes' libraries parse them ----------------------------

DEVICE = {"driver": "gpu.nvidia.com", "attributes": {"gpu.nvidia.com": {"type": "gpu"}}, "capacity": {}}


@pytest.mark.parametrize(("expression", "result"), [
    ("isSemver('1.0.0')", True), ("isSemver('1.0.0\\n')", False),
    ("isQuantity('1Gi')", True), ("isQuantity('1Gi\\n')", False), ("isQuantity(' 1Gi')", False),
])
def test_cel_reads_versions_and_quantities_whole(expression: str, result: bool) -> None:
    """k8s.io/apiserver pkg/cel/library semverlib.go (blang/semver `Parse`) and quantity.go
    (`resource.ParseQuantity`, which trims nothing)."""
    assert evaluate(expression, DEVICE) is result


@pytest.mark.parametrize("expression", ["semver('1.0.0\\n').major() == 1", "quantity('1Gi\\n').isInteger()",
                                        "quantity(' 1Gi').isInteger()"])
def test_cel_refuses_a_version_or_quantity_with_white_space(expression: str) -> None:
    with pytest.raises(CelError):
        evaluate(expression, DEVICE)


def test_a_version_or_quantity_with_a_newline_is_none() -> None:
    assert SemVer("580.95.5").parts == (580, 95, 5)
    with pytest.raises(ValueError):
        SemVer("580.95.5\n")
    assert parse_quantity("80Gi") == 80 << 30
    with pytest.raises(ValueError):
        parse_quantity("80Gi\n")


# --- agents and policy --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("reference", "accepted"), [
    ("0", True), ("0\n", False), ("0:1", True), ("0:1\n", False), ("\u0663", False), ("MIG-GPU-" +
     "b1028956-cfa2-0990-bf4a-5da9abb51763/3/0", True), ("MIG-GPU-b1028956-cfa2-0990-bf4a-5da9abb51763/3/0\n", False),
])
def test_a_device_reference_of_the_plugin_config_is_read_whole(reference: str, accepted: bool) -> None:
    """k8s-device-plugin v0.20.0 api/config/v1 replicas.go `IsGPUIndex`, `IsMigIndex`, `IsMigUUID`
    (strconv.ParseUint: ASCII digits, nothing after them)."""
    text = f"version: v1\nsharing:\n  timeSlicing:\n    resources: [{{name: gpu, replicas: 2, devices: [{json.dumps(reference)}]}}]\n"
    if accepted:
        parse_plugin_config(text)
    else:
        with pytest.raises(PluginConfigError, match="unsupported device reference"):
            parse_plugin_config(text)


def _cdi(kind: str = "nvidia.com/gpu", name: str = "0") -> dict[str, Any]:
    return {"cdiVersion": "0.5.0", "kind": kind,
            "devices": [{"name": name, "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}]}


@pytest.mark.parametrize(("spec", "wanted"), [
    (_cdi(kind="nvidia.com/gpu\n"), "kind"), (_cdi(name="0\n"), "is not a CDI device name"),
])
def test_cdi_names_are_read_whole(spec: dict[str, Any], wanted: str) -> None:
    """container-device-interface pkg/parser parser.go `ValidateVendorName`, `ValidateClassName`,
    `ValidateDeviceName`: every character is checked."""
    assert spec_problems(_cdi()) == []
    assert any(wanted in problem for problem in spec_problems(spec)), spec_problems(spec)


def test_a_gke_mig_device_id_is_read_whole() -> None:
    assert device_keys("nvidia0/gi1", {}) == ("0-1", "nvidia0/gi1")
    assert device_keys("nvidia0/gi1\n", {}) == ("nvidia0/gi1\n",)


def test_a_policy_duration_is_read_whole() -> None:
    assert _seconds("1m30s") == 90
    assert _seconds("1m30s\n") is None
    assert _seconds("\u0661m") is None


def test_a_render_replaces_only_its_own_files(tmp_path: Path) -> None:
    """A file whose name only ends like a manifest's (here with a newline) is not one a render wrote: it stays."""
    foreign = tmp_path / "0001-namespace.yaml\n"
    foreign.write_text("mine\n", encoding="utf-8")
    (tmp_path / "0009-old.yaml").write_text("old\n", encoding="utf-8")
    write_files({"0001-namespace.yaml": "kind: Namespace\n"}, tmp_path)
    assert foreign.read_text(encoding="utf-8") == "mine\n"
    assert not (tmp_path / "0009-old.yaml").exists()
