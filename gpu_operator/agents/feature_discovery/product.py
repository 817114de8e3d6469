"""Product names and architecture families, spelled the way GFD spells them in label values.

A label value may only contain letters, digits, `-`, `_` and `.`, so a model name is *sanitised*: characters
outside `[A-Za-z0-9-_. ]` are deleted and the remaining words joined with `-` ("NVIDIA H100 80GB HBM3" becomes
`NVIDIA-H100-80GB-HBM3`). A product name joins sanitised parts with `-` (`NVIDIA-A100-SXM4-80GB-MIG-1g.10gb`)
and ends in `-SHARED` when its resource is replicated under its own name.

The family comes from the compute capability: major version first, then the minor version for the majors that
span two architectures (7.5 is Turing, 8.9 is Ada Lovelace).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["FAMILIES", "UNDEFINED_FAMILY", "SHARED_SUFFIX", "sanitise", "product_name", "architecture_family"]

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9\-_. ]")

SHARED_SUFFIX = "SHARED"
UNDEFINED_FAMILY = "undefined"

#: Compute capability major -> (lowest minor, family) in ascending minor order.
FAMILIES: dict[int, tuple[tuple[int, str], ...]] = {
    1: ((0, "tesla"),),
    2: ((0, "fermi"),),
    3: ((0, "kepler"),),
    5: ((0, "maxwell"),),
    6: ((0, "pascal"),),
    7: ((0, "volta"), (5, "turing")),
    8: ((0, "ampere"), (9, "ada-lovelace")),
    9: ((0, "hopper"),),
    10: ((0, "blackwell"),),
    12: ((0, "blackwell"),),
    13: ((0, "rubin"),),
}


def sanitise(text: str) -> str:
    """Drop characters a label value cannot hold, join the words with `-`."""
    return "-".join(_NOT_ALLOWED.sub("", text).split())


def product_name(parts: Iterable[str | None], shared: bool = False) -> str | None:
    """Sanitised non-empty parts joined with `-` (plus `-SHARED`); None when there are no parts."""
    kept = [sanitise(part) for part in parts if part]
    if not kept:
        return None
    return "-".join([*kept, SHARED_SUFFIX] if shared else kept)


def architecture_family(major: int, minor: int) -> str:
    """The family GFD labels a compute capability with (`undefined` for majors it does not know)."""
    family = UNDEFINED_FAMILY
    for lowest_minor, name in FAMILIES.get(major, ()):
        if minor >= lowest_minor:
            family = name
    return family
