"""`gpu-operator images`: what a config pulls, as a person reads it, as JSON, or as `source mirror` pairs.

Each image and chart is shown with the reference the `registry` mirror serves it as, when the config has one
(:mod:`gpu_operator.config.mirror`); the pairs form (images only, one `<source> <mirror>` per line) feeds a copy
loop: `gpu-operator images -o pairs | while read -r from to; do crane copy "$from" "$to"; done`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from gpu_operator.manifests import format_table
from gpu_operator.render.pulled import PulledChart, PulledImage

__all__ = ["FORMATS", "Charts", "Images"]

Images = Sequence[tuple[PulledImage, PulledImage]]
Charts = Sequence[tuple[PulledChart, PulledChart]]


def _text(registry: str | None, images: Images, charts: Charts) -> str:
    mirror = registry is not None
    image_rows = [(source.reference, *([target.reference] if mirror else []), ", ".join(source.pulled_by))
                  for source, target in images]
    chart_rows = [(source.name, source.version, source.origin, *([target.origin] if mirror else []),
                   source.installed_by) for source, target in charts]
    lines = [format_table(("IMAGE", *(("MIRROR",) if mirror else ()), "PULLED BY"), image_rows)]
    if chart_rows:
        lines += ["", format_table(("CHART", "VERSION", "FROM", *(("MIRROR",) if mirror else ()), "INSTALLED BY"),
                                   chart_rows)]
    where = f"; mirror {registry}" if mirror else "; no registry mirror set"
    lines += ["", f"{len(images)} image{'s' if len(images) != 1 else ''} and {len(charts)} Helm "
                  f"chart{'s' if len(charts) != 1 else ''}{where}"]
    return "\n".join(lines) + "\n"


def _json(registry: str | None, images: Images, charts: Charts) -> str:
    return json.dumps({
        "registry": registry,
        "images": [{"image": source.reference, "mirror": target.reference if registry else None,
                    "pulledBy": list(source.pulled_by)} for source, target in images],
        "charts": [{"chart": source.name, "version": source.version, "from": source.origin,
                    "mirror": target.origin if registry else None, "installedBy": source.installed_by}
                   for source, target in charts],
    }, indent=2) + "\n"


def _pairs(registry: str | None, images: Images, charts: Charts) -> str:
    return "".join(f"{source.reference} {target.reference}\n" for source, target in images)


#: `--output` → how the report is written.
FORMATS: dict[str, Callable[[str | None, Images, Charts], str]] = {"text": _text, "json": _json, "pairs": _pairs}
