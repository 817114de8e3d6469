"""pulumi-gpu-operator: NVIDIA's GPU Operator, modelled as typed, previewable Pulumi resources.

The package is layered so that data flows one way:

* :mod:`gpu_operator.config` turns a config document into validated, immutable models;
* :mod:`gpu_operator.render` turns those models into ordered Kubernetes objects (plain dicts);
* :mod:`gpu_operator.components` registers the objects as Pulumi resources;
* :mod:`gpu_operator.agents` holds the node-side programs that the operands run.
"""

__all__ = ["__version__", "UPSTREAM_OPERATOR_VERSION"]

__version__ = "0.1.0"

#: The NVIDIA GPU Operator release whose chart defaults and manifests we mirror.
UPSTREAM_OPERATOR_VERSION = "v26.7.0"
