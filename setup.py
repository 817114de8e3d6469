"""Package layout: the top-level `components/` folder ships as `gpu_operator.components`.

pyproject.toml cannot express a renamed package together with discovery, so the mapping lives here. Namespace
discovery keeps data-only folders (simulated GPU profiles, operand scripts, the built-in config) in the wheel.
`pulumi_gpu_operator` only carries the `pulumi-plugin.json` that tells Pulumi's Python language host this
distribution brings no resource plugin (see its docstring).
"""

from setuptools import find_namespace_packages, setup

_EXCLUDE = ["*.__pycache__", "*.__pycache__.*"]
CORE = find_namespace_packages(include=["gpu_operator", "gpu_operator.*"], exclude=_EXCLUDE)
COMPONENTS = [
    "gpu_operator." + package
    for package in find_namespace_packages(include=["components", "components.*"], exclude=_EXCLUDE)
]

PLUGIN_MARKER = ["pulumi_gpu_operator"]

setup(packages=CORE + COMPONENTS + PLUGIN_MARKER, package_dir={"gpu_operator.components": "components"})
