"""The ground floor: what other programs parse and publish, known to config, render and the agents alike.

Nothing here imports anything of this package above it (config, render, components, agents, policy, the CLIs),
so every floor may import it:

* :mod:`~gpu_operator.facts.kube_names`: Kubernetes' rules for names, label keys and label values;
* :mod:`~gpu_operator.facts.quantity`: Kubernetes quantities, and how the API server stores them;
* :mod:`~gpu_operator.facts.label_selector`: label selector text, parsed and matched as `labels.Parse` does;
* :mod:`~gpu_operator.facts.resource_names`: the device plugin's resource names, as its `NewResourceName` reads
  them (config for `name` and `rename`, the plugin on the node for its config file);
* :mod:`~gpu_operator.facts.dra_driver`: what NVIDIA's DRA driver publishes (drivers, DeviceClasses,
  attributes, capacities, its chart);
* :mod:`~gpu_operator.facts.dra_cel`: CEL selectors of DRA requests, checked against those attributes and
  evaluated as Kubernetes' CEL environment does.
"""
