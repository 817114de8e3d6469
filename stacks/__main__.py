"""The Pulumi program: one GPU operator deployment per stack, from the stack's `gpu-operator:config` document.

Stack config (stacks/Pulumi.<env>.yaml):

    config:
      gpu-operator:kubeconfig: {secure: ...}   # kubeconfig of the target cluster (a secret)
      gpu-operator:config: {...}               # the config document (see README)
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
from gpu_operator.components import GpuOperator

from gpu_operator.config import parse_config

settings = pulumi.Config("gpu-operator")
document = parse_config(settings.get_object("config") or {}, source="gpu-operator:config")
provider = k8s.Provider("cluster", kubeconfig=settings.require_secret("kubeconfig"))
operator = GpuOperator("gpu", {"provider": provider, "config": document})

pulumi.export("namespace", operator.namespace)
pulumi.export("gpuResourceNames", operator.gpu_resource_names)
pulumi.export("nodeSelectorLabels", operator.node_selector_labels)
pulumi.export("runtimeClassName", operator.runtime_class_name)
