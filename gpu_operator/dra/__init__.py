"""Dynamic Resource Allocation (DRA) with NVIDIA's DRA driver: the driver's facts, CEL selectors, and previews.

With DRA (`resource.k8s.io/v1`, GA in Kubernetes 1.34) a pod asks for devices by their attributes through a
ResourceClaim instead of counting `nvidia.com/gpu`. NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu)
publishes each node's GPUs, MIG devices and ComputeDomain channels as ResourceSlices; the scheduler evaluates the
claims' CEL selectors against them.

* :mod:`~gpu_operator.facts.dra_driver`: what the driver publishes (drivers, DeviceClasses, attributes, capacities);
* :mod:`~gpu_operator.facts.dra_cel`: CEL selectors parsed, checked against those attributes, and evaluated;
* :mod:`~gpu_operator.dra.slices`: ResourceSlice-shaped devices for a node read through our NVML layer;
* :mod:`~gpu_operator.dra.match`: a claim's requests evaluated against such devices (`gpu-operator dra match`).

Nothing here imports Pulumi; the agents' NVML layer is imported only by :mod:`~gpu_operator.dra.slices`.
"""
