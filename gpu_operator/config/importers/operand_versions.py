"""Operand versions a values file pins, beside the ones it leaves to the chart: a mixed release, said out loud.

NVIDIA releases the operands of a GPU Operator version together and tests them together. A values file written for
an older chart often pins some of them (`driver.version`, `toolkit.version`) and leaves the rest to the chart's
defaults; imported here, the rest are the v26.7.0 chart's, so the stack runs operands of two releases side by side.
The import says which versions came from the file and which are this release's, so the mix is a choice. The
driver (and the vGPU manager, an image of your own) is chosen per fleet from the driver branches a release
supports, so pinning it alone mixes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_operator import UPSTREAM_OPERATOR_VERSION
from gpu_operator.config.clusterpolicy.common import ImageFields
from gpu_operator.config.clusterpolicy.spec import ClusterPolicySpec

__all__ = ["mixed_versions_note"]

#: Sections whose version is chosen per fleet, not per operator release.
_CHOSEN_PER_FLEET = frozenset({"driver", "vgpuManager"})


def _default_versions() -> dict[str, str]:
    """ClusterPolicy section → the chart's default image version, for the sections that name one."""
    spec = ClusterPolicySpec()
    return {field.alias or name: section.version for name, field in ClusterPolicySpec.model_fields.items()
            if isinstance(section := getattr(spec, name), ImageFields) and section.version
            and (field.alias or name) not in _CHOSEN_PER_FLEET}


def mixed_versions_note(document: Mapping[str, Any]) -> str | None:
    """A note when the imported document pins some operands to versions other than this release's defaults and
    leaves others at them; None when it pins none, or every one it could."""
    operator = document.get("operator") or {}
    defaults = _default_versions()
    pinned = {section: str(operator[section]["version"]) for section in defaults
              if isinstance(operator.get(section), Mapping) and operator[section].get("version")
              and str(operator[section]["version"]) != defaults[section]}
    if not pinned:
        return None
    others = [section for section in defaults if section not in pinned]
    if not others:
        return None
    given = ", ".join(f"{section} {version}" for section, version in pinned.items())
    kept = ", ".join(f"{section} {defaults[section]}" for section in others[:4]) + (", ..." if len(others) > 4 else "")
    return (f"the values pin {given}; every other operand takes the GPU Operator {UPSTREAM_OPERATOR_VERSION} chart's "
            f"version ({kept}): NVIDIA tests one release's operands together, so pin the others to the same release "
            "as these, or drop these pins to run the whole of this one")
