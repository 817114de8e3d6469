"""GpuOperator for programs in other languages: the `gpu-operator` Pulumi component provider.

This folder is a Pulumi plugin (`PulumiPlugin.yaml`, `__main__.py`): `pulumi package add <folder>` lets a Pulumi
YAML, TypeScript, Go or C# program create `gpu-operator:index:GpuOperator`, which the Python language host
constructs in this package. `plugin_folder` writes such a folder for any interpreter.

* :mod:`.component`: the entry component, with arguments every language can pass (a kubeconfig, the config
  document) around the Python `GpuOperator`;
* :mod:`.provider`: the provider (package `gpu-operator`), which reports config problems as input errors;
* :mod:`.plugin_folder`: a plugin folder bound to the Python that has this package (run it with `python -m`).
"""

from gpu_operator.components.multi_language.component import GpuOperator, GpuOperatorInputs
from gpu_operator.components.multi_language.provider import PACKAGE_NAME, GpuOperatorProvider, serve

__all__ = ["PACKAGE_NAME", "GpuOperator", "GpuOperatorInputs", "GpuOperatorProvider", "serve"]
