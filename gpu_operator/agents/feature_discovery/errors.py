"""The one way labelling fails: a node state GFD refuses to label.

GFD stops (and exits non-zero) rather than publish misleading labels in a few cases: a driver version it cannot
parse, MPS sharing configured on a node whose GPUs have MIG enabled, a vGPU capability record it cannot read,
a MIG device whose profile cannot be determined. Those raise :class:`LabelError`.
"""

from __future__ import annotations

__all__ = ["LabelError", "Labels"]

#: Node labels: key -> value, both strings.
Labels = dict[str, str]


class LabelError(Exception):
    """The node cannot be labelled; the message says why."""
