"""Container image references, checked against the distribution reference grammar that registries and kubelet use.

NVIDIA composes an operand's image as `repository/image:version` (`repository/image@version` when the version
is a digest), or takes `image` alone as a full reference. A reference a registry cannot parse fails only when
the kubelet pulls it, node by node, long after `pulumi up` reported success; so each part is checked here, where
the key that holds it is still known. The grammar (github.com/distribution/reference):

```
reference  := name [ ":" tag ] [ "@" digest ]
name       := [ domain "/" ] path-component [ "/" path-component ]*
domain     := host [ ":" port ]        host: DNS labels joined by ".", letters of either case, or "localhost"
path-component := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
tag        := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
digest     := "sha256:" 64 lower-case hex digits (the only algorithm registries serve)
```

The first component of a name is the registry only when it looks like a host (it has a `.` or a `:`, or is
`localhost`), as `docker pull` decides; `NVIDIA/driver` is therefore a repository path, and an invalid one.
"""

from __future__ import annotations

import re

__all__ = ["check_repository", "check_path", "check_reference", "check_tag_or_digest", "MAX_NAME_LENGTH"]

#: Longest repository name (domain and path) registries accept.
MAX_NAME_LENGTH = 255

_PATH_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*\Z")
_DOMAIN = re.compile(
    r"^(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])(?:\.(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]))*"
    r"(?::[0-9]+)?\Z"
)
_IPV6_DOMAIN = re.compile(r"^\[[0-9A-Fa-f:]+\](?::[0-9]+)?\Z")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}\Z")
_PATH_RULE = "lower-case letters and digits, separated by '.', '_', '__' or '-'"


def _looks_like_host(component: str) -> bool:
    return "." in component or ":" in component or component == "localhost" or component.startswith("[")


def check_path(path: str, what: str = "image", whole: str | None = None) -> None:
    """A repository path (no registry): slash-separated lower-case components; ValueError says which is bad."""
    for component in path.split("/"):
        if not _PATH_COMPONENT.match(component):
            hint = f"; write {component.lower()!r}" if _PATH_COMPONENT.match(component.lower()) else ""
            raise ValueError(
                f"{whole or path!r} is not a valid {what}: path component {component!r} must be {_PATH_RULE}{hint}"
            )


def check_repository(repository: str) -> None:
    """`[registry[:port]/]path`, as in `nvcr.io/nvidia` or `myregistry.example.com:5000/mirror/nvidia`."""
    first, _, rest = repository.partition("/")
    if rest and _looks_like_host(first):
        if not (_DOMAIN.match(first) or _IPV6_DOMAIN.match(first)):
            raise ValueError(f"{repository!r} is not a valid image repository: {first!r} is not a registry host[:port]")
        check_path(rest, "image repository", repository)
    elif _looks_like_host(first) and not rest and first != "localhost":
        # a bare registry is fine as the repository part: NVIDIA appends `/image`
        if not (_DOMAIN.match(first) or _IPV6_DOMAIN.match(first)):
            raise ValueError(f"{repository!r} is not a valid image repository: not a registry host[:port]")
    else:
        check_path(repository, "image repository")


def check_tag_or_digest(version: str) -> None:
    """An image version: a tag, or a `sha256:` digest (NVIDIA writes `@version` for those)."""
    if version.startswith("sha256:"):
        if not _DIGEST.match(version):
            raise ValueError(f"digest {version!r} must be 'sha256:' followed by 64 lower-case hex digits")
    elif not _TAG.match(version):
        raise ValueError(
            f"{version!r} is not a valid image tag: up to 128 letters, digits, '_', '.' and '-', not starting "
            "with '.' or '-'"
        )


def check_reference(reference: str) -> None:
    """A full reference (`registry/path[:tag][@sha256:...]`), as `image` alone is used verbatim."""
    name, _, digest = reference.partition("@")
    if digest:
        check_tag_or_digest(digest)
        if not digest.startswith("sha256:"):
            raise ValueError(f"{reference!r}: the part after '@' must be a digest 'sha256:<64 hex digits>'")
    last_slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > last_slash:
        name, tag = name[:colon], name[colon + 1:]
        check_tag_or_digest(tag)
        if tag.startswith("sha256:"):
            raise ValueError(f"{reference!r}: a digest follows '@', not ':'")
    if not name:
        raise ValueError(f"{reference!r} has no repository name")
    check_repository(name)
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"{reference!r}: the repository name is longer than {MAX_NAME_LENGTH} characters")
