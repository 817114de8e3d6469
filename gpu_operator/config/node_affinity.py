"""A pod's node affinity (core/v1 `NodeAffinity`), held to the API server's rules.

NVIDIA's NVIDIADriver spec carries one (`nodeAffinity`); a node selector term is a list of requirements that must
all hold, and a node matches the required affinity when any term holds (`ValidateNodeSelector`,
`ValidateNodeSelectorRequirement`): `In`/`NotIn` need values, `Exists`/`DoesNotExist` take none, `Gt`/`Lt` take one
whole number; a term with no requirement at all matches nothing, so the API server refuses it.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.facts.kube_names import is_label_value, qualified_name_problem

__all__ = ["NodeSelectorRequirement", "NodeSelectorTerm", "NodeSelector", "PreferredSchedulingTerm", "NodeAffinity"]


class NodeSelectorRequirement(ConfigModel):
    """`key operator values`, e.g. `{key: team, operator: In, values: [research]}`."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: tuple[str, ...] = ()

    @field_validator("key")
    @classmethod
    def _key(cls, key: str) -> str:
        problem = qualified_name_problem(key)
        if problem is not None:
            raise ValueError(problem)
        return key

    @model_validator(mode="after")
    def _values_fit_the_operator(self) -> Self:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs values")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        if self.operator in ("Gt", "Lt") and (len(self.values) != 1 or not self.values[0].lstrip("-").isdigit()):
            raise ValueError(f"operator {self.operator} takes exactly one whole number in values")
        bad = [value for value in self.values if self.operator in ("In", "NotIn") and not is_label_value(value)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a label value")
        return self


class NodeSelectorTerm(ConfigModel):
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    @model_validator(mode="after")
    def _not_empty(self) -> Self:
        if not (self.match_expressions or self.match_fields):
            raise ValueError("a term with no matchExpressions and no matchFields matches no node")
        return self


class NodeSelector(ConfigModel):
    node_selector_terms: tuple[NodeSelectorTerm, ...] = Field(min_length=1)


class PreferredSchedulingTerm(ConfigModel):
    weight: int = Field(ge=1, le=100)
    preference: NodeSelectorTerm


class NodeAffinity(ConfigModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = ()
