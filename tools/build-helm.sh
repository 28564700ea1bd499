#!/usr/bin/env bash
# Builds `helm` 3 and 4 for the chart tests (test/chart/: the chart works with both) and for admins
# without one, from the Go module proxy (no binary downloads). The versions are the ones the helper
# modules tools/helm/go.mod (Helm 3) and tools/helm4/go.mod (Helm 4) require. The binaries land in the
# cache outside git, keyed by version, and are rebuilt only when missing:
#
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/helm-v3.<x.y>
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/helm-v4.<x.y>
#
# Usage: tools/build-helm.sh [--print-paths | --check]
#   --print-paths   print "helm=<path>" and "helm4=<path>" and exit (builds nothing)
#   --check         exit 0 when both are cached, 1 otherwise (builds nothing)
# Idempotent; safe to run on every CI run (a warm run only checks the two files, in milliseconds). A cold
# build takes 4-5 minutes per binary on 2 busy cores (module download included) and ~1.5 GiB of RAM.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool=build-helm
# shellcheck source=lib/go-build.sh
source "$here/lib/go-build.sh"

helm_version="$(version_of "$here/helm/go.mod" helm.sh/helm/v3)"
helm_bin="$bin_dir/helm-$helm_version"
helm4_version="$(version_of "$here/helm4/go.mod" helm.sh/helm/v4)"
helm4_bin="$bin_dir/helm-$helm4_version"

if [[ "${1:-}" == "--print-paths" ]]; then
  echo "helm=$helm_bin"
  echo "helm4=$helm4_bin"
  exit 0
elif [[ "${1:-}" == "--check" ]]; then
  [[ -x "$helm_bin" && -x "$helm4_bin" ]]
  exit
elif [[ $# -gt 0 ]]; then
  die "unknown argument $1 (usage: $0 [--print-paths | --check])"
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
# Helm 4 finds the Kubernetes version in its build info by itself.
build helm4 "$here/helm4" helm.sh/helm/v4/cmd/helm "$helm4_bin" \
  "-s -w -X helm.sh/helm/v4/internal/version.version=$helm4_version -X helm.sh/helm/v4/internal/version.gitTreeState=clean" version
say "ready: $helm_bin"
say "ready: $helm4_bin"
