"""Reading user YAML strictly: one clear problem for every file a person can hand us, never a traceback.

YAML as PyYAML's safe loader reads it lets a duplicate key silently win, accepts any byte it can guess an encoding
for, recurses once per nesting level, and shares aliased nodes so that a few hundred bytes of anchors and aliases
("billion laughs") expand to gigabytes in whatever walks the result. A config must not change meaning or exhaust
the machine quietly, so :class:`StrictLoader` (a :class:`yaml.SafeLoader`) and the readers here refuse, each with
the file, the place and the fix:

- a path that is missing, a directory, not a regular file (a FIFO or a device would block or never end), larger
  than :data:`MAX_FILE_BYTES`, or unreadable;
- bytes that are not UTF-8 (the byte offset and line are named; a UTF-8 byte-order mark is allowed);
- a duplicate mapping key at any depth (the key's path and both line numbers; YAML merge keys `<<` may still be
  overridden, as YAML intends);
- nesting deeper than :data:`MAX_DEPTH`, counted through aliases too;
- aliases that expand the document beyond :data:`MAX_EXPANDED_SIZE` nodes and characters, or that refer to
  themselves;
- tags other than YAML's standard ones (`!!python/object` and friends), and any other YAML syntax error, with
  its line and column;
- in a config document or stack file (`yaml12=True`), a plain value that YAML 1.1 (this reader) and YAML 1.2
  (Pulumi's reader of stack files) read differently: `yes`/`no`/`on`/`off` (a boolean, or the word), `1_000`,
  `1:30`, `0b101` (numbers, or text) and `017` (octal 15, or 17). `render -f` would review another value than
  `pulumi up` deploys, so the fix is to write `true`/`false`, the number, or the quoted text. Helm values and the
  device plugin's config are read as YAML 1.1 by their own programs too, so they are not checked for it.

An empty file, or one holding only comments, is an empty document (`None`): for a config document that means the
chart defaults, which callers say so when they act on it.
"""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gpu_operator.config.errors import ConfigError, Problem, format_path

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPANDED_SIZE",
    "MAX_FILE_BYTES",
    "STDIN",
    "RefusedYamlError",
    "StrictLoader",
    "parse_yaml_documents",
    "parse_yaml_value",
    "read_text",
    "read_yaml_document",
    "read_yaml_documents",
    "source_name",
]

#: Nesting deeper than this is refused (Kubernetes objects inside a values file nest about 12 levels).
MAX_DEPTH = 100
#: Files larger than this are refused (NVIDIA's largest values file is about 30 KiB).
MAX_FILE_BYTES = 2 * 1024 * 1024
#: Nodes plus scalar characters the document may have once every alias is expanded; a file within
#: MAX_FILE_BYTES without aliases stays well below it, so only aliases can reach it.
MAX_EXPANDED_SIZE = 4 * MAX_FILE_BYTES

_MERGE_TAG = "tag:yaml.org,2002:merge"
_BOOL_TAG, _INT_TAG, _FLOAT_TAG = ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
#: YAML 1.2's core schema (yaml.org/spec/1.2.2 10.3.2): what it reads as a boolean, an integer and a float.
_YAML12_BOOLS = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})
_YAML12_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_YAML12_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)")

#: byte-order marks of encodings YAML allows but we do not, and their names
_OTHER_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)

#: a phrase in PyYAML's description of a syntax error → how to fix it
_SYNTAX_HINTS: tuple[tuple[str, str], ...] = (
    ("'\\t' that cannot start any token", "indent with spaces: YAML does not allow tabs for indentation"),
    ("mapping values are not allowed here", "quote a value that contains ': ', or fix the indentation"),
    ("found undefined alias", "define the anchor (&name) before the alias (*name) that uses it"),
    ("could not determine a constructor for the tag", "write plain values: only YAML's standard tags are read"),
    ("found unhashable key", "use a plain string as the key"),
    ("found duplicate anchor", "give each anchor (&name) a name of its own"),
    ("expected a mapping for merging", "merge (<<) only mappings"),
    ("expected <block end>, but found", "check the indentation of this line and the one before"),
    ("could not find expected ':'", "add the ':' after the key, or close the quote opened before"),
)


class _StrictYamlError(yaml.MarkedYAMLError):
    """A problem StrictLoader finds that plain YAML allows; carries its own fix."""


class RefusedYamlError(yaml.YAMLError):
    """Problems StrictLoader found in a composed document (duplicate keys, aliases), each with its key path."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(problem) for problem in problems))
        self.problems = problems


class StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses what the module docstring lists, as `yaml.load(text, Loader=StrictLoader)` too.

    Nesting is limited while composing (before Python's recursion limit is near); duplicate keys and alias
    expansion are checked on the composed document, before anything is constructed from it.
    """

    #: Refuse plain values YAML 1.2 reads otherwise (see the module docstring).
    yaml12 = False

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def construct_document(self, node: Node) -> Any:
        problems = _NodeCheck(self).run(node)
        self.constructed_objects = {}  # the keys the check constructed; the document is constructed afresh
        if problems:
            raise RefusedYamlError(problems)
        return super().construct_document(node)

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise _StrictYamlError(
                    problem=f"nested deeper than {MAX_DEPTH} levels; a config document nests far less: "
                    "check for a runaway indentation or unclosed brackets",
                    problem_mark=mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _line(mark: yaml.Mark | None) -> int:
    return mark.line + 1 if mark is not None else 0


#: The path that means "read standard input" (`-f -`).
STDIN = "-"


def source_name(path: Path | str) -> str:
    """How messages name a path: `standard input` for `-`, the path otherwise."""
    return "standard input" if str(path) == STDIN else str(path)


def _read_stdin(fail: Callable[[str], ConfigError]) -> bytes:
    stream = sys.stdin
    if stream is None or stream.closed:
        raise fail("is closed; pipe the document in (`cat config.yaml | gpu-operator render -f -`)")
    if stream.isatty():
        raise fail("is a terminal, not a document: pipe the document in (`cat config.yaml | gpu-operator render "
                   "-f -`), or give the file's path")
    try:
        return stream.buffer.read(MAX_FILE_BYTES + 1) if hasattr(stream, "buffer") else (
            stream.read(MAX_FILE_BYTES + 1).encode("utf-8"))
    except OSError as error:
        raise fail(f"cannot be read: {error.strerror or error}") from None


def read_text(path: Path | str) -> str:
    """The file's text (standard input's for `-`), decoded as UTF-8; ConfigError names the file and what is wrong
    with it."""
    path = Path(path)

    def fail(message: str) -> ConfigError:
        return ConfigError([Problem("", message)], source_name(path))

    if str(path) == STDIN:
        data = _read_stdin(fail)
        if len(data) > MAX_FILE_BYTES:
            raise fail(f"is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; a config document is a few KiB")
        return _decode(data, fail)
    try:
        refused = _not_a_file(path)
        if refused:
            raise fail(refused)
        with path.open("rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        parent = path.parent
        hint = "check the path" if parent.is_dir() else f"the directory {parent} does not exist either"
        raise fail(f"no such file; {hint}") from None
    except PermissionError:
        raise fail("cannot be read: permission denied; make the file readable by this user (chmod u+r)") from None
    except OSError as error:
        raise fail(f"cannot be read: {error.strerror or error}; check the path") from None
    if len(data) > MAX_FILE_BYTES:
        raise fail(f"is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; a config document is a few KiB: "
                   "is this the right file?")
    return _decode(data, fail)


def _not_a_file(path: Path) -> str | None:
    """Why an existing path is not a file to read (a directory, a device, a FIFO), or None."""
    if path.is_dir():
        candidates = sorted(p.name for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())[:3]
        hint = f" such as {', '.join(str(path / name) for name in candidates)}" if candidates else ""
        return f"is a directory; give the path of a YAML file{hint}"
    if path.exists() and not path.is_file():
        return "is not a regular file (a device, FIFO or socket); give the path of a YAML file"
    return None


def _decode(data: bytes, fail: Callable[[str], ConfigError]) -> str:
    for bom, encoding in _OTHER_BOMS:
        if data.startswith(bom):
            raise fail(f"is {encoding} text (byte-order mark at byte offset 0); save the file as UTF-8")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise fail(f"is binary, not text (a NUL byte at byte offset {nul}); give the path of a YAML file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise fail(
            f"is not UTF-8 text: byte 0x{data[error.start]:02x} at byte offset {error.start} (line {line}) is "
            "not valid UTF-8 (a Latin-1 or Windows-1252 file?); save the file as UTF-8"
        ) from None


def _syntax_problem(error: yaml.YAMLError, text: str) -> Problem:
    if isinstance(error, yaml.reader.ReaderError):
        line = text.count("\n", 0, error.position) + 1
        return Problem("", f"not valid YAML: line {line}: control character U+{error.character:04X} is not "
                       "allowed in YAML text; remove it (a binary file, or a copy-paste?)")
    if not isinstance(error, yaml.MarkedYAMLError):
        return Problem("", f"not valid YAML: {error}")
    mark = error.problem_mark or error.context_mark
    where = f"line {_line(mark)}, column {mark.column + 1}: " if mark is not None else ""
    what = error.problem or error.context or "not valid YAML"
    if error.context and error.problem and error.context_mark is not None and not isinstance(error, _StrictYamlError):
        what = f"{what} ({error.context} at line {_line(error.context_mark)})"
    text = str(error)
    hint = next((fix for phrase, fix in _SYNTAX_HINTS if phrase in text), None)
    prefix = "" if isinstance(error, _StrictYamlError) else "not valid YAML: "
    return Problem("", f"{prefix}{where}{what}" + (f"; {hint}" if hint else ""))


class _NodeCheck:
    """One walk over a composed document: duplicate keys, depth and size through aliases, recursive aliases.

    The walk is iterative and visits each node once (aliases share nodes), so a bomb is measured, not expanded.
    """

    def __init__(self, loader: StrictLoader) -> None:
        self.loader = loader
        self.problems: list[Problem] = []
        self.size: dict[int, int] = {}
        self.depth: dict[int, int] = {}
        self.keys: set[int] = set()

    def run(self, root: Node) -> list[Problem]:
        on_path: set[int] = set()
        stack: list[tuple[Node, tuple[str | int, ...], bool]] = [(root, (), False)]
        while stack:
            node, path, children_done = stack.pop()
            key = id(node)
            if children_done:
                on_path.discard(key)
                if not self._measure(node, path):
                    return self.problems  # measuring on would only repeat the problem for every ancestor
                continue
            if key in self.size:
                continue
            if key in on_path:
                return [Problem(format_path(path), f"line {_line(node.start_mark)}: an alias refers to the "
                                "collection that contains it (a recursive anchor); write the value out instead")]
            on_path.add(key)
            stack.append((node, path, True))
            for child, child_path in reversed(list(self._children(node, path))):
                if id(child) not in self.size:
                    stack.append((child, child_path, False))
        return self.problems

    def _children(self, node: Node, path: tuple[str | int, ...]) -> list[tuple[Node, tuple[str | int, ...]]]:
        if isinstance(node, SequenceNode):
            return [(item, (*path, index)) for index, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            children: list[tuple[Node, tuple[str | int, ...]]] = []
            for key_node, value_node in node.value:
                label = key_node.value if isinstance(key_node, ScalarNode) else "?"
                self.keys.add(id(key_node))
                children.append((key_node, path))
                children.append((value_node, (*path, str(label))))
            return children
        return []

    def _measure(self, node: Node, path: tuple[str | int, ...]) -> bool:
        """Record the node's expanded size and depth; False when they are over the limits."""
        if isinstance(node, ScalarNode):
            size, depth = 1 + len(node.value), 0
            if self.loader.yaml12 and id(node) not in self.keys:
                self._check_yaml12(node, path)
        else:
            children = [child for child, _ in self._children(node, path)]
            size = 1 + sum(self.size[id(child)] for child in children)
            depth = 1 + max((self.depth[id(child)] for child in children), default=0)
            if isinstance(node, MappingNode):
                self._check_duplicates(node, path)
        self.size[id(node)], self.depth[id(node)] = size, depth
        where = f"line {_line(node.start_mark)}: "
        if depth > MAX_DEPTH:
            self.problems.append(Problem(format_path(path), f"{where}aliases nest this value deeper than "
                                         f"{MAX_DEPTH} levels; write the value out with less nesting"))
            return False
        if size > MAX_EXPANDED_SIZE:
            self.problems.append(Problem(format_path(path), f"{where}aliases (*name) expand this value to more than "
                                         f"{MAX_EXPANDED_SIZE:,} nodes and characters (a YAML alias bomb?); "
                                         "write the values out, or alias fewer times"))
            return False
        return True

    def _check_yaml12(self, node: ScalarNode, path: tuple[str | int, ...]) -> None:
        """A plain scalar that YAML 1.2 would read as another value than this YAML 1.1 reader does."""
        text, tag = node.value, node.tag
        if node.style is not None or tag not in (_BOOL_TAG, _INT_TAG, _FLOAT_TAG):
            return
        digits = text.lstrip("+-")
        differs = (
            (tag == _BOOL_TAG and text not in _YAML12_BOOLS)
            or (tag == _INT_TAG and (not _YAML12_INT.fullmatch(text) or (digits[:1] == "0" and digits.isdigit()
                                                                          and len(digits) > 1)))
            or (tag == _FLOAT_TAG and not _YAML12_FLOAT.fullmatch(text))
        )
        if not differs:
            return
        value = self.loader.construct_object(node)
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
        fix = "write true or false" if tag == _BOOL_TAG else f"write {shown}"
        self.problems.append(Problem(format_path(path), (
            f"line {_line(node.start_mark)}: {text} is {shown} to this reader (YAML 1.1) but not to YAML 1.2 "
            f"readers such as Pulumi's, which deploy the stack: {fix}, or quote it ('{text}') for the text")))

    def _check_duplicates(self, node: MappingNode, path: tuple[str | int, ...]) -> None:
        first_line: dict[Any, tuple[int, str]] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            try:
                key = self.loader.construct_object(key_node)
            except yaml.YAMLError:
                continue  # construction reports it with its position
            if not isinstance(key, (str, int, float, bool, type(None))) and not hasattr(key, "isoformat"):
                continue
            line = _line(key_node.start_mark)
            identity = (type(key).__name__, key)
            if identity in first_line:
                before, _ = first_line[identity]
                self.problems.append(Problem(
                    format_path((*path, str(key_node.value))),
                    f"duplicate key (lines {before} and {line}): YAML would silently keep only the second; "
                    "remove one, or merge them",
                ))
            else:
                first_line[identity] = (line, key_node.value)


class _Yaml12StrictLoader(StrictLoader):
    yaml12 = True


def parse_yaml_documents(text: str, source: str, *, yaml12: bool = False) -> list[Any]:
    """Every document of a YAML stream, each checked strictly; ConfigError (with `source`) lists the problems.
    `yaml12`: also refuse plain values YAML 1.2 reads otherwise (config documents and stack files)."""
    documents: list[Any] = []
    try:
        loader = (_Yaml12StrictLoader if yaml12 else StrictLoader)(text)
    except yaml.YAMLError as error:
        raise ConfigError([_syntax_problem(error, text)], source) from None
    try:
        while loader.check_node():
            documents.append(loader.construct_document(loader.get_node()))
    except RefusedYamlError as error:
        raise ConfigError(error.problems, source) from None
    except yaml.YAMLError as error:
        raise ConfigError([_syntax_problem(error, text)], source) from None
    finally:
        loader.dispose()
    return documents


def read_yaml_documents(path: Path | str, *, yaml12: bool = False) -> list[Any]:
    """The non-empty documents of a YAML file, read strictly (see the module docstring)."""
    return [d for d in parse_yaml_documents(read_text(path), source_name(path), yaml12=yaml12) if d is not None]


def read_yaml_document(path: Path | str, *, yaml12: bool = False) -> Any:
    """The one document of a YAML file, or None when it is empty; more than one non-empty document is an error."""
    documents = read_yaml_documents(path, yaml12=yaml12)
    if len(documents) > 1:
        raise ConfigError([Problem("", f"holds {len(documents)} YAML documents (separated by '---'); this file "
                                   "must hold one: remove the separators or split it into one file per document")],
                          source_name(path))
    return documents[0] if documents else None


def parse_yaml_value(text: str) -> Any:
    """One YAML document held in a config value (a ConfigMap's YAML text), read strictly; None when empty.

    For validators: the problem is raised as a one-line ValueError, which pydantic reports at the value's path.
    """
    try:
        documents = [d for d in parse_yaml_documents(text, "the text") if d is not None]
    except ConfigError as error:
        raise ValueError("; ".join(str(problem) for problem in error.problems)) from None
    if len(documents) > 1:
        raise ValueError(f"holds {len(documents)} YAML documents (separated by '---'); give one")
    return documents[0] if documents else None
