#!/bin/sh
# Startup probe of the nvidia-driver-ctr container (ConfigMap nvidia-driver-startup-probe).
#
# The probe passes once the containerized driver is usable on this node. On success it publishes
# .driver-ctr-ready in the shared status directory: the driver validator waits for that file, and reads
# from it which optional modules (GDRCopy, GPUDirect Storage, GPUDirect RDMA) it must check as well.
set -eu

status_dir=/run/nvidia/validations
module_refcount=/sys/module/nvidia/refcnt
ready_file="${status_dir}/.driver-ctr-ready"
daemons_file="${status_dir}/.driver-daemons-status"

fail() {
    echo "driver startup probe: $*" >&2
    exit 1
}

[ -e "${module_refcount}" ] || fail "the nvidia kernel module is not loaded"

# The driver container reports on the daemons it starts (persistenced, fabric manager, ...) in this file;
# while it exists, anything but Ready means the driver is still coming up.
if [ -f "${daemons_file}" ]; then
    daemons_state=$(tr -d '[:space:]' < "${daemons_file}")
    [ "${daemons_state}" = "Ready" ] || fail "driver daemons are '${daemons_state}', not Ready"
fi

smi_output=$(nvidia-smi 2>&1) || fail "nvidia-smi failed: ${smi_output}"

# Write a temporary file next to the target and rename it, so a reader never sees a partial file.
mkdir -p "${status_dir}"
staging="${ready_file}.$$"
trap 'rm -f "${staging}"' EXIT
{
    echo "GDRCOPY_ENABLED: ${GDRCOPY_ENABLED:-false}"
    echo "GDS_ENABLED: ${GDS_ENABLED:-false}"
    echo "GPU_DIRECT_RDMA_ENABLED: ${GPU_DIRECT_RDMA_ENABLED:-false}"
} > "${staging}"
mv -f "${staging}" "${ready_file}"
