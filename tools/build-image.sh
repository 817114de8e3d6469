#!/usr/bin/env bash
# Build the agents image (Dockerfile at the repository root) for linux/amd64 with the first container builder
# that can actually build here: Docker (buildx, or the classic builder) with a running engine, Podman, or Buildah.
# A docker client without an engine does not count: `docker info` must answer.
#
#   tools/build-image.sh [IMAGE]      IMAGE defaults to gpu-operator-agents:<package version>
#
# Exit 1, saying what to install or start, when no builder is usable. Push the result yourself and set
# `agents.image` in the config, or let the stack build and push it (`agents.build`).
set -euo pipefail

cd "$(dirname "$0")/.."
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' pyproject.toml | head -n 1)"
image="${1:-gpu-operator-agents:${version}}"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
platform="linux/amd64"
args=(--platform "$platform" --build-arg "VERSION=${version}" --build-arg "REVISION=${revision}" -t "$image")

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    if docker buildx version >/dev/null 2>&1; then
        builder=(docker buildx build --load)
    else
        builder=(docker build)
    fi
elif command -v podman >/dev/null 2>&1; then
    builder=(podman build)
elif command -v buildah >/dev/null 2>&1; then
    builder=(buildah build)
else
    if command -v docker >/dev/null 2>&1; then
        found="the docker client is installed, but no Docker engine answers (docker info failed): start the engine"
    else
        found="no docker, podman or buildah on PATH: install one"
    fi
    cat >&2 <<EOF
make image: no container builder can build here: ${found},
or let the stack build and push the image to your Azure Container Registry (agents.build in the config).
EOF
    exit 1
fi

echo "make image: ${builder[*]} ${args[*]} ." >&2
"${builder[@]}" "${args[@]}" .
echo "make image: built ${image} (${platform}); push it to a registry your nodes pull from, then set agents.image" >&2
