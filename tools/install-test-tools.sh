#!/usr/bin/env sh
# Best-effort install of the programs some tests drive for real (Debian's `prometheus` for the scrape tests).
# Tests that need a program skip with a message when it could not be installed here; this never fails the build.
set -u
if command -v prometheus >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "note: prometheus not installed (needs root and apt-get); the Prometheus scrape tests will skip" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1; then
    echo "installed $(prometheus --version 2>&1 | head -n 1)"
else
    echo "note: apt-get could not install prometheus; the Prometheus scrape tests will skip" >&2
fi
exit 0
