#!/bin/sh
# Start NVIDIA's device plugin once the driver is validated on this node.
#
# The validator writes driver-ready when the driver works; the file is a list of
# VAR=value lines (driver root, device root, host-driver flag) that tell the
# plugin where to find the driver, so every variable in it is exported.
# GPUDirect Storage and GDRCopy device nodes are offered to pods when their
# kernel modules are loaded, unless the DaemonSet already decided.

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

loaded() {
  grep -q "^$1 " /proc/modules
}

if [ -z "${GDS_ENABLED:-}" ] && loaded nvidia_fs; then
  export GDS_ENABLED=true
  export MOFED_ENABLED="${MOFED_ENABLED:-true}"
fi
if [ -z "${GDRCOPY_ENABLED:-}" ] && loaded gdrdrv; then
  export GDRCOPY_ENABLED=true
fi

echo "starting nvidia-device-plugin"
exec nvidia-device-plugin
