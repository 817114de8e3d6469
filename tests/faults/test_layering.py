"""The fault catalog is a ground floor: pure data and functions that import nothing of ours but themselves (not
config, render, components, agents, policy or the remediation above them), and no I/O beyond their package data."""

from __future__ import annotations

import sys

from tests.config.test_layering import import_paths, package_modules

#: What the catalog may import besides itself: the standard library and PyYAML.
ALLOWED_THIRD_PARTY = {"yaml"}


def test_the_faults_package_imports_only_itself_and_the_standard_library() -> None:
    chains = import_paths(package_modules("gpu_operator.faults"))
    outside = {
        module: chain for module, chain in chains.items()
        if module.split(".")[0] not in sys.stdlib_module_names | ALLOWED_THIRD_PARTY
        and module != "gpu_operator" and not module.startswith("gpu_operator.faults")
        and module != "__future__"
    }
    assert outside == {}, {module: " -> ".join(chain) for module, chain in outside.items()}
