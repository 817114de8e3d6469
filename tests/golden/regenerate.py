"""Regenerate the golden files: `make golden` (or `python -m tests.golden.regenerate [CASE ...]`).

* `tests/golden/manifests/<case>.yaml`: the rendered manifests of the built-in default and every example config;
* `tests/golden/stacks/<env>.yaml`: the resources `stacks/__main__.py` registers for `stacks/Pulumi.<env>.yaml`
  under mocks (type, name, parent type, the inputs that matter).

Name cases (`default`, `time-slicing`, `stacks/prod`) to regenerate only those. Review the diff before
committing: it is exactly what the change does to users' clusters and cloud resources.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from gpu_operator.config import load_config
from gpu_operator.manifests import dump_all_yaml, dump_yaml
from gpu_operator.render import render
from tests.golden.cases import CASES, GOLDEN_DIR, golden_path
from tests.golden.stack_cases import STACK_ENVS, STACK_GOLDEN_DIR, stack_golden_path
from tests.support.stack_programs import resource_list, run_stack

_ROOT = GOLDEN_DIR.parent.parent.parent


def stack_golden_text(env: str) -> str:
    """The golden resource list of one environment's stack, as YAML."""
    return dump_yaml(resource_list(run_stack(env).recording))


def main(argv: Sequence[str] = ()) -> None:
    wanted = set(argv)
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    STACK_GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for case, config in CASES.items():
        if not wanted or case in wanted:
            golden_path(case).write_text(dump_all_yaml(render(load_config(config))))
            print(f"wrote {golden_path(case).relative_to(_ROOT)}")
    for env in STACK_ENVS:
        if not wanted or f"stacks/{env}" in wanted:
            stack_golden_path(env).write_text(stack_golden_text(env))
            print(f"wrote {stack_golden_path(env).relative_to(_ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
