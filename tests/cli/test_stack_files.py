"""`gpu-operator render -f stacks/Pulumi.<env>.yaml`: what the stack deploys, reviewed without the Pulumi CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.config import parse_config
from gpu_operator.render import render
from gpu_operator.render.monitoring import monitoring_objects
from gpu_operator.render.network import network_objects
from gpu_operator.render.aks.documents import azure_documents
from tests.conftest import ROOT

STACKS = ROOT / "stacks"


def stack_document(name: str) -> dict:
    return yaml.safe_load((STACKS / name).read_text())["config"]["gpu-operator:config"]


@pytest.mark.parametrize("stack", ["Pulumi.dev.yaml", "Pulumi.prod.yaml"])
def test_a_stack_file_renders_its_gpu_operator_config(stack: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-f", str(STACKS / stack)]) == 0
    out, err = capsys.readouterr()
    config = parse_config(stack_document(stack))
    expected = [*network_objects(config), *render(config), *monitoring_objects(config)]
    assert list(yaml.safe_load_all(out)) == expected
    assert expected != render(parse_config({}))  # the stack's document, not the defaults
    assert "error" not in err


@pytest.mark.parametrize(("stack", "azure"), [
    ("Pulumi.dev.yaml", ["agentpool-t4.json", "managedcluster-aks-gpu-dev.json"]),
    ("Pulumi.prod.yaml", ["agentpool-h100mig.json", "agentpool-h100train.json"]),
])
def test_a_stack_file_renders_its_pools_to_a_directory(stack: str, azure: list[str], tmp_path: Path) -> None:
    assert main(["render", "-f", str(STACKS / stack), "-o", str(tmp_path)]) == 0
    assert sorted(p.name for p in (tmp_path / "azure").iterdir()) == azure
    config = parse_config(stack_document(stack))
    for name, document in azure_documents(config).items():
        assert json.loads((tmp_path / "azure" / name).read_text()) == document


def test_the_prod_summary_shows_the_stacks_pools_and_mig(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-f", str(STACKS / "Pulumi.prod.yaml"), "--summary"]) == 0
    out = capsys.readouterr().out
    assert "GPU pools in AKS cluster rg-gpu-prod/aks-gpu-prod (existing):" in out
    assert "h100mig" in out and "all-1g.10gb" in out


def test_a_stack_without_the_config_renders_the_defaults_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.bare.yaml"
    stack.write_text("config:\n  azure-native:location: westeurope\n  gpu-operator:subscriptionId: 00000000-0000-0000-0000-000000000000\n")
    assert main(["render", "-f", str(stack)]) == 0
    out, err = capsys.readouterr()
    assert list(yaml.safe_load_all(out)) == render(parse_config({}))
    assert "the stack sets no gpu-operator:config: rendering what stacks/__main__.py deploys for it" in err


def test_a_json_string_config_is_read_as_get_object_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.json.yaml"
    stack.write_text("config:\n  gpu-operator:config: '{\"operator\": {\"mig\": {\"strategy\": \"mixed\"}}}'\n")
    assert main(["render", "-f", str(stack)]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert documents == render(parse_config({"operator": {"mig": {"strategy": "mixed"}}}))


def test_a_misspelt_setting_is_an_error_not_a_render_of_the_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.typo.yaml"
    stack.write_text("environment: [shared/gpu]\nconfig:\n  gpu-operator:confg: {operator: {}}\n")
    assert main(["render", "-f", str(stack)]) == 2
    out, err = capsys.readouterr()
    assert "config.gpu-operator:confg: is not a setting stacks/__main__.py reads: did you mean gpu-operator:config?" in err
    assert out == ""


def test_the_settings_read_offline_are_the_programs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every `settings.get*("<key>")` of stacks/__main__.py is a setting the stack-file reader accepts, and no other."""
    import ast

    from gpu_operator.config.stack_file import CONFIG_KEY, TARGET_KEYS

    tree = ast.parse((STACKS / "__main__.py").read_text())
    read = {f"gpu-operator:{node.args[0].value}" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "settings"
            and node.args and isinstance(node.args[0], ast.Constant)}
    assert read == {CONFIG_KEY, *TARGET_KEYS}
    stack = tmp_path / "Pulumi.env.yaml"
    stack.write_text("environment: [shared/gpu]\nconfig:\n  gpu-operator:waitForDaemonsets: true\n"
                     "  azure-native:location: westeurope\n")
    assert main(["render", "-f", str(stack)]) == 0
    err = capsys.readouterr().err
    assert "Pulumi ESC environments (environment:), which are not read offline" in err
    assert "the stack sets no gpu-operator:config" in err
