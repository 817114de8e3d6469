"""The config floor imports nothing above it: not render, components, the DRA commands, agents, policy or the CLIs.

Every `import` of every module under `gpu_operator/config` (lazy ones inside functions too) is followed through
the package's own modules, transitively, and no path may reach a floor above config. Facts that config and render
both need live below both, in :mod:`gpu_operator.facts` (the DRA driver's names, quantities, label selectors).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import gpu_operator

PACKAGE = Path(gpu_operator.__file__).parent
#: Module prefixes above the config floor, and third-party packages config must not need.
ABOVE_CONFIG = (
    "gpu_operator.render", "gpu_operator.components", "components", "gpu_operator.dra", "gpu_operator.agents",
    "gpu_operator.policy", "gpu_operator.cli", "gpu_operator.diag", "gpu_operator.workloads",
    "gpu_operator.readiness", "gpu_operator.manifests", "pulumi", "pulumi_kubernetes", "pulumi_azure_native",
)


def _module_file(module: str) -> Path | None:
    if module != "gpu_operator" and not module.startswith("gpu_operator."):
        return None
    path = PACKAGE.joinpath(*module.split(".")[1:])
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str) -> Iterator[str]:
    """Every module an import statement of `path` names (and, for `from X import y`, `X.y` too: y may be one)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def package_modules(package: str) -> dict[str, Path]:
    """The modules of one of our packages, by name."""
    return {_module_name(path): path for path in sorted(PACKAGE.joinpath(*package.split(".")[1:]).rglob("*.py"))}


def import_paths(roots: dict[str, Path]) -> dict[str, list[str]]:
    """Every module reachable from the `roots` (name → file), with the chain of imports that reaches it."""
    chains = {module: [module] for module in roots}
    queue = list(chains)
    while queue:
        module = queue.pop()
        path = roots.get(module) or _module_file(module)
        if path is None:
            continue
        for imported in _imports(path, module):
            if imported not in chains:
                chains[imported] = [*chains[module], imported]
                queue.append(imported)
    return chains


def _above(module: str) -> bool:
    return any(module == prefix or module.startswith(f"{prefix}.") for prefix in ABOVE_CONFIG)


def test_config_reaches_no_floor_above_it() -> None:
    reached = {module: chain for module, chain in import_paths(package_modules("gpu_operator.config")).items()
               if _above(module)}
    assert reached == {}, "\n".join(" -> ".join(chain) for chain in reached.values())


def test_the_facts_floor_reaches_nothing_of_the_package_but_itself() -> None:
    reached = {module: chain for module, chain in import_paths(package_modules("gpu_operator.facts")).items()
               if module.startswith("gpu_operator.") and not module.startswith("gpu_operator.facts")}
    assert reached == {}, "\n".join(" -> ".join(chain) for chain in reached.values())


@pytest.mark.parametrize("statement", [
    "from gpu_operator.render.quantity import canonical_quantity",
    "from gpu_operator.dra.command import run_dra",
    "import gpu_operator.agents.label_selector",
    "from gpu_operator.policy import check",
    "from ..render import stack",
])
def test_the_check_sees_an_upward_import_wherever_it_is_written(tmp_path: Path, statement: str) -> None:
    """The walk itself: a module of config that imports upwards, even lazily in a function, is reported."""
    probe = tmp_path / "probe.py"
    probe.write_text(f"def late() -> None:\n    {statement}\n", encoding="utf-8")
    chains = import_paths({"gpu_operator.config.probe": probe})
    assert [chain for name, chain in chains.items() if _above(name)], chains


def test_imports_are_followed_through_other_modules(tmp_path: Path) -> None:
    """Each module reached is read in turn: render.stored leads on to the quantity module it imports."""
    probe = tmp_path / "probe.py"
    probe.write_text("from gpu_operator.render.stored import as_stored\n", encoding="utf-8")
    chains = import_paths({"gpu_operator.config.probe": probe})
    assert chains["gpu_operator.facts.quantity"][:2] == ["gpu_operator.config.probe", "gpu_operator.render.stored"]
