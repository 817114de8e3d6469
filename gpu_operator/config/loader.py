"""Reading a config document: from a mapping, YAML text or a file, to a validated GpuStackConfig.

Validation happens once, completely, before anything is rendered or registered: field errors and cross-section
errors are gathered into one ConfigError. A valid document is returned as its effective config (what its GPU
pools imply folded into the operator and cluster sections, see :mod:`gpu_operator.config.effective`; with a
`registry`, every image and chart moved to that mirror, :mod:`gpu_operator.config.mirror`).

`-` names standard input (`gpu-operator render -f -`), whose relative chart paths are read against the working
directory. Files are read strictly (:mod:`gpu_operator.config.yaml_reader`: one UTF-8 YAML document, no duplicate keys, no
alias bombs). An empty file is the empty document, the chart defaults. A Pulumi stack file is read for the
document its `gpu-operator:config` setting holds (:mod:`gpu_operator.config.stack_file`). A chart source's relative
`path` is read against the directory of that file, or of the working directory for a document given in memory
(:mod:`gpu_operator.config.chart_checks`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from collections.abc import Mapping

from pydantic import ValidationError

from gpu_operator.config.chart_checks import chart_source_problems
from gpu_operator.config.checks import semantic_problems
from gpu_operator.config.document import NFD_CHART, GpuStackConfig
from gpu_operator.config.dra import DRA_CHART
from gpu_operator.config.effective import effective_config
from gpu_operator.config.errors import ConfigError, Problem, problems_from_validation_error
from gpu_operator.config.file_kinds import config_document_problem
from gpu_operator.config.mirror import with_mirror
from gpu_operator.config.network import NETWORK_CHART
from gpu_operator.config.stack_file import StackDocument, is_stack_file, stack_document
from gpu_operator.config.yaml_reader import read_yaml_document, source_name

__all__ = ["parse_config", "load_config", "load_document", "document_directory", "read_yaml_mapping", "yaml_kind",
           "BUILTIN_DEFAULT"]

#: Each chart section's upstream home, for a `registry` mirror (:mod:`gpu_operator.config.mirror`).
_PUBLISHED = {"nfd": NFD_CHART, "network": NETWORK_CHART, "dra": DRA_CHART}

#: The built-in default stack that `make run` renders: an AKS H100 pool with the full operator.
BUILTIN_DEFAULT = Path(__file__).with_name("builtin") / "default.yaml"


def parse_config(
    data: Mapping[str, Any] | GpuStackConfig | None, source: str = "config", base: Path | None = None
) -> GpuStackConfig:
    """Validate a config document and return its effective config; raise ConfigError listing every problem.

    `base` is the directory relative chart paths are read against (default: the working directory)."""
    if isinstance(data, GpuStackConfig):
        doc = data
    else:
        if data is not None and not isinstance(data, Mapping):
            raise ConfigError([Problem("", f"a config document must be a mapping, got {type(data).__name__}")], source)
        kind = config_document_problem(data, _file_argument(source))
        if kind is not None:
            raise ConfigError([kind], source)
        try:
            doc = GpuStackConfig.model_validate(dict(data or {}))
        except ValidationError as error:
            raise ConfigError(problems_from_validation_error(error, model=GpuStackConfig), source) from None
    problems = [*semantic_problems(doc), *chart_source_problems(doc, base)]
    if problems:
        raise ConfigError(problems, source)
    return with_mirror(effective_config(doc), _PUBLISHED)


def _file_argument(source: str) -> str:
    """The file a command line would name for `source`, or FILE where it is no file of its own."""
    return source if Path(source).suffix in (".yaml", ".yml", ".json") else "FILE"


_YAML_TYPES = {"list": "a list", "str": "a string", "int": "a number", "float": "a number", "bool": "a boolean",
               "date": "a date", "datetime": "a timestamp", "bytes": "binary data"}


def yaml_kind(value: Any) -> str:
    """What a YAML value is, in YAML's words ("a list", "a string"), for messages that never name a Python type."""
    return _YAML_TYPES.get(type(value).__name__, "a value that is not a mapping")


def read_yaml_mapping(path: Path | str, *, yaml12: bool = False) -> dict[str, Any]:
    """Load one YAML document that must be a mapping (an empty file is an empty mapping); `yaml12`: as a config
    document or stack file, whose plain values must read the same in YAML 1.2 (:mod:`.yaml_reader`)."""
    data = read_yaml_document(path, yaml12=yaml12)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError([Problem("", f"must hold a mapping of settings (key: value lines), but holds "
                                       f"{yaml_kind(data)}")],
                          source_name(path))
    return data


def document_directory(path: Path | str | None) -> Path:
    """The directory a config file's relative paths are read against: the file's own (the built-in default's
    without one)."""
    return (Path(path) if path is not None else BUILTIN_DEFAULT).parent


def load_document(path: Path | str | None = None) -> StackDocument:
    """The config document of a file (a config document, or a Pulumi stack file), with notes for the reader."""
    path = Path(path) if path is not None else BUILTIN_DEFAULT
    data = read_yaml_mapping(path, yaml12=True)
    source = source_name(path)
    if is_stack_file(data):
        return stack_document(data, source)
    notes = () if data else (f"{source} holds an empty document: rendering it (the GPU Operator chart's defaults)",)
    return StackDocument(data, source, notes)


def load_config(path: Path | str | None = None) -> GpuStackConfig:
    """Load and validate a config file (or a Pulumi stack file); without a path, the built-in default stack."""
    loaded = load_document(path)
    return parse_config(loaded.document, source=loaded.source, base=document_directory(path))
