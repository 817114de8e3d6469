"""The operator controller (`gpu-operator-agent operator`): node labelling and rolling driver upgrades.

A static Pulumi program cannot react to a node that joins, reboots or needs a new driver; this controller does,
as NVIDIA's operator does, with the same labels and state values. Its decisions are pure functions
(:mod:`.reconcile` over :mod:`.cluster_state`, built on `gpu_operator.labels` and `gpu_operator.upgrade`); the
I/O around them is lightkube: watches (:mod:`.informer`), writes (:mod:`.actuator`), a Lease (:mod:`.leader`),
a status ConfigMap and Events (:mod:`.status`, :mod:`.loop`) and Prometheus metrics (:mod:`.metrics`).
"""
