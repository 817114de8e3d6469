"""What Pulumi's Python language host reads about this distribution: it brings no resource plugin.

The host takes every installed distribution named `pulumi-*` for a provider SDK and, unless the module of the same
name (`pulumi_gpu_operator`) holds a `pulumi-plugin.json`, reports a resource plugin named after it (`gpu-operator`,
at the distribution's version) as required. No such plugin exists: installing the plugins of a Python program that
uses this package, or of the `gpu-operator` component provider (`pulumi package add`), would try to download it and
fail. The `pulumi-plugin.json` beside this file says `"resource": false`. Nothing imports this module.
"""

__all__: list[str] = []
