"""Where a Helm chart the stack installs comes from: its upstream home, a mirror, or a chart on disk.

Every chart the stack installs beside its own objects (Node Feature Discovery, the Network Operator, the DRA
driver) has a `chart` key in its section that says where Helm gets it. Exactly one kind, or none:

```yaml
nfd:
  chart: {oci: oci://mirror.example.com/nfd/charts}  # an OCI registry path; Helm appends the chart's name
  # or: chart: {repository: https://charts.example.com/nfd}   a Helm chart repository (the folder with index.yaml)
  # or: chart: {path: ../charts/node-feature-discovery-0.19.0.tgz}   a chart directory or a packaged chart
  # or nothing (chart: {}): the chart's upstream home, the default
```

A repository or registry is asked for the section's version (`chartVersion`; the DRA driver's is pinned). A
local chart is installed as it is, so it is checked when the config is read (:mod:`gpu_operator.config.chart_checks`):
it must exist and its `Chart.yaml` must name the expected chart and version, so the values the stack renders
always meet the chart they were written for.

Only `https://` repositories are accepted: a chart brings privileged DaemonSets and cluster-wide RBAC, and a
plain-HTTP download can be replaced on the way. Credentials never go into a URL (they would land in the rendered
files and the Pulumi state). An air-gapped site without an HTTPS mirror downloads the chart once
(`helm pull`) and gives its `path`.

A `chartVersion` is one exact version (SemVer, as `Chart.yaml` gives it): Helm would also take a range (`>=26.0`,
`~0.19`, `0.19.x`), and then install whatever is newest when `pulumi up` runs instead of the chart the stack's
values are written for, so :func:`check_chart_version` refuses ranges, `latest` (no chart has that version) and a
leading `v` (which a local chart's `Chart.yaml` never matches).

A relative `path` is read against the directory of the config document or stack file it is written in; in the
Pulumi program, against the program's working directory, which Pulumi sets to the project's `main` directory
(`stacks/`, where the stack files are too), so both readings name the same file. It is handed to Helm as
written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Self
from collections.abc import Callable
from urllib.parse import SplitResult, urlsplit

from pydantic import Field, ValidationInfo, field_validator, model_validator

from gpu_operator.config.base import ConfigModel

__all__ = ["SOURCE_KINDS", "ChartLocation", "ChartSource", "ChartSourceKind", "PublishedChart", "check_chart_version"]

ChartSourceKind = Literal["repository", "oci", "path"]

#: The keys of a chart source, one per kind, in the order they are described to a user.
SOURCE_KINDS: tuple[ChartSourceKind, ...] = ("repository", "oci", "path")

_DOWNLOAD_IT = "download the chart once (helm pull) and give its path: instead"

#: SemVer 2 (semver.org's grammar, which Helm's chart versions follow).
_SEMVER = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(-((0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?"
)
#: What makes a version text a range for Helm's constraint parser (Masterminds/semver).
_RANGE_MARKS = ("<", ">", "=", "~", "^", "*", "x", "X", "||", " - ", ",", " ")


def check_chart_version(value: str, pinned: str) -> str:
    """One exact chart version; `pinned` is the version the stack's values are written for (for the message)."""
    if _SEMVER.fullmatch(value):
        return value
    if value.lower() in ("latest", "stable", "main", "master"):
        raise ValueError(f"{value!r} is not a chart version (a chart repository has no {value!r}): pin one, e.g. "
                         f"{pinned!r}, the version the stack's values are written for")
    if value[:1] in "vV" and _SEMVER.fullmatch(value[1:]):
        raise ValueError(f"{value!r}: chart versions are written without the 'v' ({value[1:]!r}), as Chart.yaml "
                         "gives them")
    if any(mark in value.strip() for mark in _RANGE_MARKS) or value.count(".") < 2:
        raise ValueError(f"{value!r} is a version range for Helm: it would install whatever is newest when pulumi "
                         f"up runs, not the chart the stack's values are written for; pin one version, e.g. "
                         f"{pinned!r}")
    raise ValueError(f"{value!r} is not a chart version: give one SemVer version such as {pinned!r}")


@dataclass(frozen=True)
class ChartLocation:
    """A chart resolved to what Helm is given: its name, the kind of source, and the URL or path (`where`)."""

    name: str
    kind: ChartSourceKind
    where: str

    @property
    def reference(self) -> str:
        """The chart argument of `helm install` / `helm.v4.Chart`: a name (with its repository given apart), an
        OCI reference (the registry path and the chart's name), or the local path."""
        return _REFERENCES[self.kind](self)

    @property
    def origin(self) -> str:
        """Where the chart comes from, for a person: the repository URL, the OCI reference, or the path."""
        return self.where if self.kind == "repository" else self.reference


_REFERENCES: dict[ChartSourceKind, Callable[[ChartLocation], str]] = {
    "repository": lambda location: location.name,
    "oci": lambda location: f"{location.where}/{location.name}",
    "path": lambda location: location.where,
}


@dataclass(frozen=True)
class PublishedChart:
    """A chart as its project publishes it: name, the version the stack's values are written for, and its home
    (an `https://` repository or an `oci://` registry path)."""

    name: str
    version: str
    home: str

    @property
    def location(self) -> ChartLocation:
        return ChartLocation(self.name, "oci" if self.home.startswith("oci://") else "repository", self.home)


def _split(value: str) -> SplitResult | None:
    if value != value.strip() or any(c.isspace() for c in value):
        return None
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return None
    return parts


def _no_credentials_query_or_fragment(parts: SplitResult) -> None:
    if parts.username is not None or parts.password is not None:
        raise ValueError("carries credentials: they would be written into the rendered files and the Pulumi "
                         "state; give the URL without them (log in to the mirror outside the stack), or "
                         f"{_DOWNLOAD_IT}")
    if parts.query or parts.fragment:
        raise ValueError("has a query or fragment (?... or #...), which Helm does not pass on: give the plain URL")


def _repository(value: str) -> str:
    parts = _split(value)
    if parts is not None and parts.scheme == "oci":
        raise ValueError(f"{value!r} is an OCI registry, not a Helm chart repository: give it as oci: instead of "
                         "repository:")
    if parts is not None and parts.scheme == "http":
        raise ValueError(f"{value!r} is plain HTTP: a chart brings privileged pods and cluster RBAC, and a plain "
                         f"download can be replaced on the way; serve the repository over https://, or {_DOWNLOAD_IT}")
    if parts is None or parts.scheme != "https" or not parts.hostname:
        raise ValueError(f"{value!r} is not an https:// URL of a Helm chart repository (the folder holding "
                         "index.yaml), e.g. https://charts.example.com/nvidia")
    _no_credentials_query_or_fragment(parts)
    path = parts.path.rstrip("/")
    folder = f"{parts.scheme}://{parts.netloc}{path.rsplit('/', 1)[0]}"
    if path.endswith("/index.yaml"):
        raise ValueError(f"{value!r} names the repository's index; give its folder, {folder}")
    if path.endswith((".tgz", ".tar.gz")):
        raise ValueError(f"{value!r} names a chart archive: give the folder of the repository that serves it "
                         f"(holding index.yaml, perhaps {folder}), or {_DOWNLOAD_IT}")
    return f"{parts.scheme}://{parts.netloc}{path}"


def _oci(value: str) -> str:
    parts = _split(value)
    if parts is not None and parts.scheme in ("https", "http"):
        raise ValueError(f"{value!r} is a web URL: a Helm chart repository goes under repository:, an OCI registry "
                         "is written oci://<registry host>/<path>")
    if parts is None or parts.scheme != "oci" or not parts.hostname:
        raise ValueError(f"{value!r} is not an OCI registry path: write oci://<registry host>/<path>, e.g. "
                         "oci://mirror.example.com/nfd/charts")
    _no_credentials_query_or_fragment(parts)
    path = parts.path.rstrip("/")
    last = path.rsplit("/", 1)[-1]
    if "@" in last or ":" in last:
        raise ValueError(f"{value!r} names a tag or digest; give the registry path only: the version is the "
                         "section's chartVersion")
    return f"oci://{parts.netloc}{path}"


def _path(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty: give the path of a chart directory (holding Chart.yaml) or of a .tgz")
    if "://" in value:
        raise ValueError(f"{value!r} is a URL: give it as repository: (https://) or oci: (oci://) instead of path:")
    return value


#: The kind of source a bare string most likely meant, by URL scheme (anything else: a path).
_KIND_BY_SCHEME: dict[str, ChartSourceKind] = {"https": "repository", "http": "repository", "oci": "oci"}

#: How each kind's value is checked (and written in one canonical form).
_CHECKS: dict[str, Callable[[str], str]] = {"repository": _repository, "oci": _oci, "path": _path}


class ChartSource(ConfigModel):
    """Where Helm gets a chart: one of `repository`, `oci` or `path`, or none for the chart's upstream home."""

    repository: str | None = Field(default=None, description="an https:// Helm chart repository (index.yaml)")
    oci: str | None = Field(default=None, description="an oci:// registry path; Helm appends the chart's name")
    path: str | None = Field(default=None, description="a local chart directory or .tgz, relative to the config")

    @model_validator(mode="before")
    @classmethod
    def _a_mapping(cls, value: object) -> object:
        if isinstance(value, str):
            kind = _KIND_BY_SCHEME.get(value.split("://", 1)[0] if "://" in value else "", "path")
            parts = _split(value)
            shown = "..." if parts is not None and (parts.username or parts.password) else value
            raise ValueError(f"must be a mapping that names the kind of source: write {{{kind}: {shown}}}")
        return value

    @field_validator("repository", "oci", "path")
    @classmethod
    def _checked(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _CHECKS[info.field_name or ""](value)

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        given = [kind for kind in SOURCE_KINDS if getattr(self, kind) is not None]
        if len(given) > 1:
            raise ValueError(f"sets {' and '.join(given)}: give exactly one source (repository, oci or path), or "
                             "none for the chart's upstream home")
        return self

    @property
    def kind(self) -> ChartSourceKind | None:
        """The kind of source given; None for the upstream default."""
        return next((kind for kind in SOURCE_KINDS if getattr(self, kind) is not None), None)

    def locate(self, published: PublishedChart) -> ChartLocation:
        """Where Helm gets `published` from this source: its upstream home when nothing is set."""
        kind = self.kind
        if kind is None:
            return published.location
        return ChartLocation(published.name, kind, getattr(self, kind))
