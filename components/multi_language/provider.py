"""The `gpu-operator` component provider: the package programs in other languages consume.

Pulumi's (experimental) component provider infers the package schema from the components' type annotations and
constructs a component when a program in another language registers one (`pulumi package add` makes the SDK or,
for YAML, just records the package). The package is `gpu-operator`, so the component's token is
`gpu-operator:index:GpuOperator`, the one the Python component registers.

One thing is ours: a bad config document. The SDK turns any exception raised while a component is constructed into
"Unexpected <class ...>: ..." followed by a Python traceback, as for a bug. A config problem is the user's input,
so the provider reports it as input-property errors instead: the engine prints one line per problem
("property config.<path> ... has a problem: <reason>") and no traceback.
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Sequence

import pulumi
from gpu_operator.components.multi_language.component import CONFIG_SOURCE, GpuOperator
from pulumi.errors import InputPropertiesError, InputPropertyErrorDetails
from pulumi.provider import ConstructResult, main
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.server import ComponentInitError

from gpu_operator.config import ConfigError

__all__ = ["COMPONENTS", "PACKAGE_NAME", "GpuOperatorProvider", "package_version", "property_errors", "serve"]

#: The Pulumi package name: tokens are `gpu-operator:index:<ClassName>`.
PACKAGE_NAME = "gpu-operator"
#: What the package offers.
COMPONENTS: tuple[type[pulumi.ComponentResource], ...] = (GpuOperator,)
_DISTRIBUTION = "pulumi-gpu-operator"


def package_version() -> str:
    """The installed distribution's version (the schema's, and so the generated SDKs')."""
    try:
        return importlib.metadata.version(_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


def property_errors(error: ConfigError) -> InputPropertiesError:
    """A config error as the engine's input-property errors, each problem under the `config` input."""
    details: list[InputPropertyErrorDetails] = [
        {"property_path": f"{CONFIG_SOURCE}.{problem.path}" if problem.path else CONFIG_SOURCE,
         "reason": problem.message}
        for problem in error.problems
    ]
    count = len(details)
    return InputPropertiesError(f"{count} problem{'s' if count != 1 else ''} in the config document", details)


class GpuOperatorProvider(ComponentProvider):
    """The component provider of the `gpu-operator` package."""

    def __init__(self, version: str | None = None) -> None:
        super().__init__(list(COMPONENTS), PACKAGE_NAME, version=version or package_version())

    def construct(self, name: str, resource_type: str, inputs: pulumi.Inputs,
                  options: pulumi.ResourceOptions | None = None) -> ConstructResult:
        try:
            return super().construct(name, resource_type, inputs, options)
        except ComponentInitError as error:
            if isinstance(error.inner, ConfigError):
                raise property_errors(error.inner) from None
            raise


def serve(argv: Sequence[str] | None = None) -> None:
    """Run the provider as a plugin: the engine's address comes as the first argument; the port it listens on
    (loopback) goes to stdout."""
    main(GpuOperatorProvider(), list(sys.argv[1:] if argv is None else argv))
