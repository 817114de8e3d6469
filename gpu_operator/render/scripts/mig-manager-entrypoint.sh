#!/bin/sh
# Start NVIDIA's MIG manager once the driver is validated on this node.
#
# The validator writes driver-ready when the driver works: VAR=value lines that
# say where the driver root and device nodes are and whether the driver runs on
# the host, so every variable in it is exported. Host GPU clients (NVSM, host
# DCGM) hold the GPU only when the driver is the host's, so that is the only
# case in which the manager stops them around a MIG mode change.

ready=/run/nvidia/validations/driver-ready

while [ ! -f "$ready" ]; do
  echo "waiting for $ready (driver validation)"
  sleep 5
done

echo "driver settings from $ready:"
cat "$ready"
set -a
. "$ready"
set +a

export WITH_SHUTDOWN_HOST_GPU_CLIENTS="${IS_HOST_DRIVER:-false}"
echo "WITH_SHUTDOWN_HOST_GPU_CLIENTS=$WITH_SHUTDOWN_HOST_GPU_CLIENTS"

echo "starting nvidia-mig-manager"
exec nvidia-mig-manager
