"""`gpu-operator-agent mig-manager`: NVIDIA's mig-manager, applying the MIG layout a node's label names.

* :mod:`.config`: loading a mig-parted config file and choosing a layout per GPU;
* :mod:`.hardware`: reading and writing MIG mode and instances through NVML;
* :mod:`.generated`: the config generated from the node's GPUs when no file is given;
* :mod:`.reconfigure`: one reconfiguration with its state label, paused operands and rollback;
* :mod:`.operand_labels`: the operands' deploy labels, paused during a change and given back at its end;
* :mod:`.command`: flags, environment and the loop over the node's `nvidia.com/mig.config`.
"""
