"""Regenerate the golden manifests: `make golden` (or `python -m tests.golden.regenerate`).

Review the diff of tests/golden/manifests/ before committing: it is exactly what the change does to users' clusters.
"""

from __future__ import annotations

from gpu_operator.config import load_config
from gpu_operator.manifests import dump_all_yaml
from gpu_operator.render import render
from tests.golden.cases import CASES, GOLDEN_DIR, golden_path


def main() -> None:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for case, config in CASES.items():
        golden_path(case).write_text(dump_all_yaml(render(load_config(config))))
        print(f"wrote {golden_path(case).relative_to(GOLDEN_DIR.parent.parent.parent)}")


if __name__ == "__main__":
    main()
