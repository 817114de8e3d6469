#!/usr/bin/env bash
# Builds the programs of the end-to-end tier from the Go module proxy into a cache outside the repository.
#
# Each folder beside this script holds a small go.mod (and its go.sum) whose `tool` lines name the commands to build;
# no upstream source is kept in the repository. Binaries land in
#   ${XDG_CACHE_HOME:-$HOME/.cache}/pulumi-gpu-operator/e2e/<key>/bin
# where <key> names the versions and hashes the go.mod/go.sum files, so a version bump builds into a fresh
# directory. Every binary is written to a temporary name and renamed when complete: a rerun skips what is built
# and resumes an interrupted build. The directory gets a `complete` stamp once every tool is there; `.ci/run` and
# `make e2e` look only at that stamp. Pulumi's Kubernetes provider and its Python and Node.js language hosts are
# not built: the proxy refuses their versions (see README.md beside this script).
#
# Usage: build.sh            build what is missing, printing progress
#        build.sh --bin-dir  print the bin directory of the current key (builds nothing)
#        build.sh --check    exit 0 when every tool of the current key is built, 1 otherwise (builds nothing)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"

K8S_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
PULUMI_VERSION=v3.259.0
PULUMI_YAML_VERSION=v1.38.1

# binary | folder | package | extra -ldflags
TOOLS=(
  "etcd|etcd|go.etcd.io/etcd/server/v3|"
  "kwok|kwok|sigs.k8s.io/kwok/cmd/kwok|"
  "kube-apiserver|kubernetes|k8s.io/kubernetes/cmd/kube-apiserver|K8S"
  "kube-scheduler|kubernetes|k8s.io/kubernetes/cmd/kube-scheduler|K8S"
  "kube-controller-manager|kubernetes|k8s.io/kubernetes/cmd/kube-controller-manager|K8S"
  "pulumi-language-yaml|pulumi|github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml|-X github.com/pulumi/pulumi-yaml/pkg/version.Version=${PULUMI_YAML_VERSION}"
  "pulumi|pulumi|github.com/pulumi/pulumi/pkg/v3/cmd/pulumi|-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=${PULUMI_VERSION}"
)

k8s_ldflags() {
  local minor="${K8S_VERSION#v1.}"
  minor="${minor%%.*}"
  echo "-X k8s.io/component-base/version.gitVersion=${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1" \
       "-X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean" \
       "-X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION} -X k8s.io/client-go/pkg/version.gitMajor=1" \
       "-X k8s.io/client-go/pkg/version.gitMinor=${minor}"
}

cache_key() {
  local sum
  sum="$(cd "$here" && cat */go.mod */go.sum | sha256sum | cut -c1-12)"
  echo "k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_pulumi-${PULUMI_VERSION}_${sum}"
}

root="${XDG_CACHE_HOME:-$HOME/.cache}/pulumi-gpu-operator/e2e/$(cache_key)"
bin="$root/bin"

all_built() {
  local entry name
  for entry in "${TOOLS[@]}"; do
    name="${entry%%|*}"
    [[ -x "$bin/$name" ]] || return 1
  done
  [[ -x "$bin/pulumi-language-python-exec" && -d "$root/kwok-stages" ]]
}

case "${1:-}" in
  --bin-dir) echo "$bin"; exit 0 ;;
  --check) all_built && [[ -f "$root/complete" ]]; exit $? ;;
  "") ;;
  *) echo "usage: $0 [--bin-dir|--check]" >&2; exit 2 ;;
esac

command -v go >/dev/null || { echo "e2e-tools: the go command is not installed (Go 1.26 or newer is needed)" >&2; exit 1; }
mkdir -p "$bin"
# One package compiled at a time: the build shares the machine with everything else.
export GOFLAGS="${E2E_GOFLAGS:--p=1 -mod=readonly -trimpath}"
export CGO_ENABLED=0
started=$(date +%s)

say() { printf '[e2e-tools %4ds] %s\n' "$(( $(date +%s) - started ))" "$*"; }

# KWOK's stage files (how simulated nodes and pods change state) ship inside the kwok module.
install_kwok_stages() {
  [[ -d "$root/kwok-stages" ]] && return 0
  local kwok_dir
  kwok_dir="$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
  rm -rf "$root/.kwok-stages.partial"
  mkdir -p "$root/.kwok-stages.partial"
  cp -r "$kwok_dir/kustomize/stage/." "$root/.kwok-stages.partial/"
  chmod -R u+w "$root/.kwok-stages.partial"
  mv "$root/.kwok-stages.partial" "$root/kwok-stages"
  say "KWOK stage files copied to $root/kwok-stages"
}

say "cache: $root"
total=${#TOOLS[@]}
n=0
for entry in "${TOOLS[@]}"; do
  IFS='|' read -r name folder package ldflags <<<"$entry"
  n=$((n + 1))
  if [[ -x "$bin/$name" ]]; then
    say "($n/$total) $name: already built"
    continue
  fi
  [[ "$ldflags" == K8S ]] && ldflags="$(k8s_ldflags)"
  # `go build` fetches only the modules whose packages it compiles (`go mod download` would also ask for the
  # .info of every module in the graph, which the proxy refuses for some pseudo-versions it serves zips of).
  say "($n/$total) $name: building $package (fetching its modules first if needed)"
  (cd "$here/$folder" && go build -ldflags "-s -w $ldflags" -o "$bin/.$name.partial" "$package")
  mv -f "$bin/.$name.partial" "$bin/$name"
  say "($n/$total) $name: built ($(du -h "$bin/$name" | cut -f1))"
  if [[ "$name" == kwok ]]; then
    install_kwok_stages
  fi
done
install_kwok_stages

# The Python language host's helper script ships inside the sdk/v3 module the Pulumi build downloaded.
sdk_dir="$(cd "$here/pulumi" && go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)"
install -m 0755 "$sdk_dir/python/cmd/pulumi-language-python-exec" "$bin/pulumi-language-python-exec"

printf 'kubernetes %s\netcd %s\nkwok %s\npulumi %s\npulumi-yaml %s\n' "$K8S_VERSION" "$ETCD_VERSION" \
  "$KWOK_VERSION" "$PULUMI_VERSION" "$PULUMI_YAML_VERSION" > "$root/versions"
touch "$root/complete"
say "all tools built in $bin"
