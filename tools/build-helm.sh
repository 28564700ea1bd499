#!/usr/bin/env bash
# Builds `helm` (Helm 3) for the chart tests (test/chart/) and for admins without one, from the Go
# module proxy (no binary downloads). The version is the one tools/helm/go.mod requires. The binary
# lands in the cache outside git, keyed by version, and is rebuilt only when missing:
#
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/helm-v<version>
#
# Usage: tools/build-helm.sh [--print-path]
#   --print-path   print the binary's path and exit (builds nothing)
# Idempotent; safe to run on every CI run (a warm run only checks the file). A cold build takes about
# two minutes on 2 cores (module download included) and ~1.5 GiB of RAM.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool=build-helm
# shellcheck source=lib/go-build.sh
source "$here/lib/go-build.sh"

helm_version="$(version_of "$here/helm/go.mod" helm.sh/helm/v3)"
helm_bin="$bin_dir/helm-$helm_version"

if [[ "${1:-}" == "--print-path" ]]; then
  echo "$helm_bin"
  exit 0
elif [[ $# -gt 0 ]]; then
  die "unknown argument $1 (usage: $0 [--print-path])"
fi

# As Helm's own Makefile: stamp the version, and the Kubernetes version `helm lint`/`helm template`
# assume (.Capabilities.KubeVersion) from the client-go Helm is built with (v0.X.Y is Kubernetes 1.X).
client_go="$(version_of "$here/helm/go.mod" k8s.io/client-go)"
k8s_minor="${client_go#v0.}"; k8s_minor="${k8s_minor%%.*}"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
build helm "$here/helm" helm.sh/helm/v3/cmd/helm "$helm_bin" "$ldflags" version
say "ready: $helm_bin"
