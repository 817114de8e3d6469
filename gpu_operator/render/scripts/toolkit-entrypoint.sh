#!/bin/sh
# Entrypoint of the nvidia-container-toolkit-ctr container (ConfigMap nvidia-container-toolkit-entrypoint).
#
# The toolkit must know where the driver lives before it configures the container runtime. The
# driver-validation init container records that in /run/nvidia/validations/driver-ready as KEY=VALUE lines
# (IS_HOST_DRIVER, NVIDIA_DRIVER_ROOT, DRIVER_ROOT_CTR_PATH, NVIDIA_DEV_ROOT, DEV_ROOT_CTR_PATH); wait for the
# file, export every line, then hand over to NVIDIA's installer.
set -eu

status_file=/run/nvidia/validations/driver-ready

until [ -f "$status_file" ]; do
    echo "driver not validated yet: waiting for $status_file"
    sleep 5
done

echo "driver validated:"
cat "$status_file"
set -a
. "$status_file"
set +a

# containerd 1.6.9 and later may send SIGTERM to a container that restarts containerd right after it starts;
# pausing first keeps the toolkit out of that crash loop.
sleep 5

exec nvidia-toolkit
