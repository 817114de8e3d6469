"""The components' reference page: the `gpu-operator` package schema, and the Python components' arguments.

Programs in other languages see what the component provider's schema says (`GpuOperatorProvider().schema`, which
Pulumi's analyzer infers from the multi-language component's annotations): each resource's inputs and outputs
are listed from it, with the example programs of `examples/multi-language/` for YAML and TypeScript and the
consumer stack of `examples/consumer-stack/` for Python. Python programs use the components of `gpu_operator.components` directly: their inputs are the `<Name>Args` TypedDicts
and their outputs the `pulumi.Output` attributes, each documented by the string literal under it, read from the
source as Pulumi's analyzer reads a component's (at run time a TypedDict keeps no attribute docstrings).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from pathlib import Path
from typing import Any

__all__ = ["PYTHON_COMPONENTS", "documented_attributes", "page"]

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = {"YAML": ("yaml", REPO / "examples/multi-language/yaml/Pulumi.yaml"),
            "TypeScript": ("typescript", REPO / "examples/multi-language/typescript/index.ts"),
            "Python": ("python", REPO / "examples/consumer-stack/__main__.py")}
#: The Python components users build with, in the order a fleet comes up.
PYTHON_COMPONENTS = ("GpuCluster", "AksCluster", "GpuNodePool", "NetworkOperator", "GpuOperator", "DraDriver",
                     "GpuMonitoring", "AgentsImage")


def documented_attributes(cls: type) -> dict[str, tuple[str, str]]:
    """Annotated attribute of the class body → (its annotation as written, the string literal right under it)."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body  # type: ignore[attr-defined]
    found: dict[str, tuple[str, str]] = {}
    for annotated, following in zip(body, [*body[1:], None]):
        if isinstance(annotated, ast.AnnAssign) and isinstance(annotated.target, ast.Name):
            documented = (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                          and isinstance(following.value.value, str))
            doc = " ".join(following.value.value.split()) if documented else ""  # type: ignore[union-attr]
            found[annotated.target.id] = (ast.unparse(annotated.annotation), doc)
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _schema_type(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        return "any" if spec["$ref"].endswith("/Any") else spec["$ref"].rsplit("/", 1)[-1]
    if spec.get("type") == "array":
        return f"list of {_schema_type(spec['items'])}"
    if spec.get("type") == "object":
        return f"map of {_schema_type(spec['additionalProperties'])}" if "additionalProperties" in spec else "object"
    return str(spec.get("type", "any"))


def _schema_resource(token: str, resource: dict[str, Any]) -> list[str]:
    required = set(resource.get("requiredInputs", ()))
    lines = [f"### `{token}`", "", resource.get("description", ""), "", "**Inputs**", "",
             "| Input | Type | Required | Plain | Description |", "|---|---|---|---|---|"]
    for name, spec in resource.get("inputProperties", {}).items():
        lines.append(f"| `{name}` | {_schema_type(spec)} | {'yes' if name in required else 'no'} | "
                     f"{'yes' if spec.get('plain') else 'no'} | {_cell(spec.get('description', ''))} |")
    always = set(resource.get("required", ()))
    lines += ["", "**Outputs**", "", "| Output | Type | Always set | Description |", "|---|---|---|---|"]
    for name, spec in resource.get("properties", {}).items():
        lines.append(f"| `{name}` | {_schema_type(spec)} | {'yes' if name in always else 'no'} | "
                     f"{_cell(spec.get('description', ''))} |")
    return [*lines, ""]


def _examples() -> list[str]:
    lines: list[str] = []
    for language, (fence, path) in EXAMPLES.items():
        lines += [f"=== \"{language}\"", "", f"    From `{path.relative_to(REPO)}`:", "", f"    ```{fence}"]
        lines += [f"    {line}".rstrip() for line in path.read_text(encoding="utf-8").splitlines()]
        lines += ["    ```", ""]
    return lines


_OPTIONAL = "NotRequired["


def _python_component(name: str) -> list[str]:
    module = importlib.import_module(f"gpu_operator.components.{_module_of(name)}")
    component, args = getattr(module, name), getattr(module, f"{name}Args")
    lines = [f"### `{name}`", "", " ".join((component.__doc__ or "").split()), "",
             f"`{name}(name, args: {name}Args, opts=None)`, from `gpu_operator.components`.", "",
             "| Argument | Type | Required | Description |", "|---|---|---|---|"]
    for arg, (hint, doc) in documented_attributes(args).items():
        optional = hint.startswith(_OPTIONAL)
        written = hint.removeprefix(_OPTIONAL)[:-1] if optional else hint
        lines.append(f"| `{arg}` | `{_cell(written)}` | {'no' if optional else 'yes'} | {_cell(doc)} |")
    outputs = documented_attributes(component)
    if outputs:
        lines += ["", "| Attribute | Type | Description |", "|---|---|---|"]
        lines += [f"| `{attr}` | `{_cell(hint)}` | {_cell(doc)} |" for attr, (hint, doc) in outputs.items()]
    return [*lines, ""]


def _module_of(name: str) -> str:
    from gpu_operator.components import _MODULES

    return _MODULES[name]


def page() -> str:
    """The Markdown of docs/reference/components.md."""
    from gpu_operator.components.multi_language.provider import PACKAGE_NAME, GpuOperatorProvider

    schema = json.loads(GpuOperatorProvider(version="0.0.0").schema)
    lines = [
        "# Components reference",
        "",
        "<!-- generated by tools/docgen/components_reference.py from the package schema and the components; "
        "do not edit -->",
        "",
        f"## The `{PACKAGE_NAME}` package (YAML, TypeScript, Go, C#)",
        "",
        "What the component provider's schema offers a program in another language (see "
        "[Using the components](../tasks/components.md) for the install lines). A *plain* input must be known "
        "when the component is constructed: not a secret, not another resource's output.",
        "",
    ]
    for token, resource in schema["resources"].items():
        lines += _schema_resource(token, resource)
    lines += ["#### Examples", "", *_examples()]
    lines += ["## Python components", "",
              "`from gpu_operator.components import ...`: every argument is a key of the args dictionary; every "
              "component also takes `pulumi.ResourceOptions`.", ""]
    for name in PYTHON_COMPONENTS:
        lines += _python_component(name)
    return "\n".join(lines).rstrip() + "\n"
