"""`gpu-operator-agent driver-manager uninstall_driver`: NVIDIA's k8s-driver-manager, run before the driver pod.

* :mod:`.labels`: the operand deploy labels, and how they are paused and restored;
* :mod:`.pods`: which pods on the node are operands, GPU users or drainable, and which may not be evicted;
* :mod:`.selector`: `DRAIN_POD_SELECTOR_LABEL`, a Kubernetes label selector;
* :mod:`.settings`: NVIDIA's flags and environment;
* :mod:`.snapshot`, :mod:`.actions`, :mod:`.plan`: the pure decisions, from one observation to the next action;
* :mod:`.host`, :mod:`.kube`: reading and changing the host and the API server;
* :mod:`.run`, :mod:`.command`: the loop and the entry point.
"""
