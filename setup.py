"""Package layout: the top-level `components/` folder ships as `gpu_operator.components`.

pyproject.toml cannot express a renamed package together with discovery, so the mapping lives here.
"""

from setuptools import find_packages, setup

CORE = find_packages(include=["gpu_operator", "gpu_operator.*"])
COMPONENTS = [
    "gpu_operator." + package
    for package in find_packages(include=["components", "components.*"])
]

setup(packages=CORE + COMPONENTS, package_dir={"gpu_operator.components": "components"})
