"""The config document's reference page, from the pydantic models that read the document.

Every key of `GpuStackConfig` is walked along the models (a section's model, a list's items `[]`, a map's values
`<name>`), with the type its annotation allows, its default and the model's description. Keys under `operator`
are the ClusterPolicy's, whose defaults are the GPU Operator chart's: each names the chart value it mirrors, read
from the table `import-values` maps the chart with (:data:`gpu_operator.config.importers.helm_keys.HELM_RULES`).
Each top-level section ends with an example: the section as the built-in default stack or the first example
config that sets it writes it.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, to_jsonable_python

from gpu_operator import UPSTREAM_OPERATOR_VERSION
from gpu_operator.config import GpuStackConfig
from gpu_operator.config.importers.helm_keys import HELM_RULES
from gpu_operator.config.importers.helm_rules import Copy
from gpu_operator.config.key_hints import annotation_types

__all__ = ["Key", "chart_values", "keys", "page"]

REPO = Path(__file__).resolve().parents[2]
#: Where a section's example is looked for, in this order.
EXAMPLE_FILES = (REPO / "gpu_operator" / "config" / "builtin" / "default.yaml",
                 *sorted((REPO / "examples" / "configs").glob("*.yaml")))
_SCALARS = {str: "string", int: "integer", bool: "boolean", float: "number", type(None): "null"}


@dataclass(frozen=True)
class Key:
    """One key of the document: its path, type, default, description and the chart value it mirrors."""

    path: str
    type: str
    default: str
    description: str
    chart_value: str


def chart_values() -> dict[str, str]:
    """Document path → the GPU Operator chart's values key it is copied from."""
    return {rule.target: key for key, rule in HELM_RULES.items() if isinstance(rule, Copy)}


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def type_name(annotation: Any) -> str:
    """The annotation in the document's words: `string`, `list of string`, `map of integer`, `'a' or 'b'`."""
    names: list[str] = []
    for option in annotation_types(annotation):
        origin, args = typing.get_origin(option), typing.get_args(option)
        if origin is typing.Literal:
            names += [json.dumps(arg) for arg in args]
        elif origin in (tuple, list, set, frozenset):
            names.append(f"list of {type_name(args[0]) if args else 'any'}")
        elif origin is dict:
            names.append(f"map of {type_name(args[1])}" if len(args) == 2 else "mapping")
        elif _is_model(option):
            names.append("mapping")
        else:
            names.append(_SCALARS.get(option, "any"))
    return " or ".join(dict.fromkeys(names))


def _default(field: FieldInfo) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.default if field.default_factory is None else field.default_factory()  # type: ignore[call-arg]
    if isinstance(value, BaseModel):
        return ""
    return json.dumps(to_jsonable_python(value, by_alias=True), separators=(", ", ": "))


def _description(field: FieldInfo, annotation: Any) -> str:
    if field.description:
        return field.description
    models = [option for option in annotation_types(annotation) if _is_model(option)]
    doc = models[0].__doc__ if models else None
    return doc.strip().split("\n\n")[0].replace("\n", " ") if doc else ""


def _children(annotation: Any, path: str) -> Iterator[tuple[type[BaseModel], str]]:
    """The models below a field, with the path their keys are written under."""
    for option in annotation_types(annotation):
        origin, args = typing.get_origin(option), typing.get_args(option)
        if _is_model(option):
            yield option, path
        elif origin in (tuple, list) and args:
            yield from _children(args[0], f"{path}[]")
        elif origin is dict and len(args) == 2:
            yield from _children(args[1], f"{path}.<name>")


def keys(model: type[BaseModel] = GpuStackConfig, prefix: str = "", seen: tuple[type, ...] = ()) -> list[Key]:
    """Every key below `model`, depth first in the models' field order."""
    mirrored = chart_values()
    found: list[Key] = []
    for name, field in model.model_fields.items():
        path = f"{prefix}.{field.alias or name}" if prefix else field.alias or name
        annotation = field.annotation
        chart = mirrored.get(path, "")
        found.append(Key(path, type_name(annotation), _default(field), _description(field, annotation), chart))
        for child, where in _children(annotation, path):
            if child not in seen:
                found += keys(child, where, (*seen, child))
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{_cell(text)}`" if text else ""


def _table(rows: list[Key]) -> list[str]:
    lines = ["| Key | Type | Default | Chart value | Description |", "|---|---|---|---|---|"]
    lines += [f"| {_code(k.path)} | {_cell(k.type)} | {_code(k.default)} | {_code(k.chart_value)} | "
              f"{_cell(k.description)} |" for k in rows]
    return lines


def _example(section: str) -> list[str]:
    for path in EXAMPLE_FILES:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if section in document:
            text = yaml.safe_dump({section: document[section]}, sort_keys=False, default_flow_style=False)
            return [f"Example, from `{path.relative_to(REPO)}`:", "", "```yaml", text.rstrip(), "```", ""]
    return ["No example config sets this section; its defaults apply.", ""]


def _section_doc(model_key: Key) -> list[str]:
    return [model_key.description, ""] if model_key.description else []


def page() -> str:
    """The Markdown of docs/reference/config.md."""
    everything = keys()
    top = [k for k in everything if "." not in k.path and "[" not in k.path]
    lines = [
        "# Config document reference",
        "",
        "<!-- generated by tools/docgen/config_reference.py from the config models; do not edit -->",
        "",
        "Every key the config document takes, walked from the models that read it (`gpu_operator.config`): its "
        "type, its default, and what it does. `[]` marks the items of a list, `<name>` the values of a map. Keys "
        f"under `operator` are an NVIDIA ClusterPolicy's, with the GPU Operator {UPSTREAM_OPERATOR_VERSION} chart's "
        "defaults; *Chart value* names the chart's values key that `gpu-operator import-values` reads into the key. "
        "An unknown key is refused with the keys of its section and the nearest of them.",
        "",
    ]
    for section in top:
        below = [k for k in everything if k.path.startswith((f"{section.path}.", f"{section.path}["))]
        lines += [f"## `{section.path}`", "", *_section_doc(section)]
        if not below:
            lines += _table([section]) + [""]
            continue
        nested = {k.path for k in below if k.type == "mapping" and k.path.count(".") == 1}
        direct = [k for k in below if not any(k.path.startswith(f"{n}.") for n in nested)]
        lines += _table(direct) + [""]
        for sub in (k for k in below if k.path in nested):
            rows = [k for k in below if k.path.startswith(f"{sub.path}.")]
            if rows:
                lines += [f"### `{sub.path}`", "", *_section_doc(sub), *_table(rows), ""]
        lines += _example(section.path)
    return "\n".join(lines).rstrip() + "\n"
