"""Reading a config document: from a mapping, YAML text or a file, to a validated GpuStackConfig.

Validation happens once, completely, before anything is rendered or registered: field errors and cross-section
errors are gathered into one ConfigError. A valid document is returned as its effective config (what its GPU
pools imply folded into the operator and cluster sections, see :mod:`gpu_operator.config.effective`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from collections.abc import Mapping

import yaml
from pydantic import ValidationError

from gpu_operator.config.checks import semantic_problems
from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.effective import effective_config
from gpu_operator.config.errors import ConfigError, Problem, problems_from_validation_error

__all__ = ["parse_config", "load_config", "read_yaml_mapping", "BUILTIN_DEFAULT"]

#: The built-in default stack that `make run` renders: an AKS H100 pool with the full operator.
BUILTIN_DEFAULT = Path(__file__).with_name("builtin") / "default.yaml"


def parse_config(data: Mapping[str, Any] | GpuStackConfig | None, source: str = "config") -> GpuStackConfig:
    """Validate a config document and return its effective config; raise ConfigError listing every problem."""
    if isinstance(data, GpuStackConfig):
        doc = data
    else:
        if data is not None and not isinstance(data, Mapping):
            raise ConfigError([Problem("", f"a config document must be a mapping, got {type(data).__name__}")], source)
        try:
            doc = GpuStackConfig.model_validate(dict(data or {}))
        except ValidationError as error:
            raise ConfigError(problems_from_validation_error(error), source) from None
    problems = semantic_problems(doc)
    if problems:
        raise ConfigError(problems, source)
    return effective_config(doc)


def read_yaml_mapping(path: Path | str) -> dict[str, Any]:
    """Load one YAML document that must be a mapping (an empty file is an empty mapping)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise ConfigError([Problem("", f"not valid YAML: {error}")], str(path)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError([Problem("", f"the file must hold a mapping, got {type(data).__name__}")], str(path))
    return data


def load_config(path: Path | str | None = None) -> GpuStackConfig:
    """Load and validate a config file; without a path, the built-in default stack."""
    path = Path(path) if path is not None else BUILTIN_DEFAULT
    return parse_config(read_yaml_mapping(path), source=str(path))
